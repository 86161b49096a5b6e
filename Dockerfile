# The acv binary in a small image: `acv serve` by default, `acv migrate` and the admin commands
# with another command. Built by docker-compose.yml; works with the classic builder and BuildKit.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/acv ./cmd/acv

# Alpine rather than distroless: the compose health checks need wget (busybox) in the image.
FROM alpine:3.20
RUN apk add --no-cache ca-certificates \
 && addgroup -S -g 10001 acv \
 && adduser -S -D -H -u 10001 -G acv -s /sbin/nologin acv
COPY --from=build /out/acv /usr/local/bin/acv
USER 10001:10001
# In a container the API must listen beyond loopback (the binary's default is 127.0.0.1:8080).
ENV ACV_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["acv"]
CMD ["serve"]
