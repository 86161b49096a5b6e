# acv — activation-code verification service.
GO      ?= go
BIN     := bin/acv
PG_BIN  := /usr/lib/postgresql/15/bin
PY_TOOLS    := pytest==9.2.0 schemathesis==4.32.5 flit_core==4.2.0
TOOLS_STAMP := .tools/stamp-$(shell echo '$(PY_TOOLS)' | cksum | cut -d' ' -f1)

.PHONY: run test build deps test-deps kafka-deps prometheus-deps loadtest bench vet fmt clean

## run: start Redis, PostgreSQL, the API and the relay locally (logs straight to PostgreSQL;
## through Kafka when KAFKA_BROKERS names one, or KAFKA=real starts a one-node Apache Kafka);
## /metrics on a loopback address of its own; PROMETHEUS=1 also runs Debian's Prometheus with
## the deployment's rules, scraping the stack and `make loadtest STACK=running`
run: deps build $(if $(filter real,$(KAFKA)),kafka-deps) $(if $(filter 1 true yes on,$(PROMETHEUS)),prometheus-deps)
	ACV_DEV_KAFKA=$(KAFKA) ACV_DEV_PROMETHEUS=$(PROMETHEUS) exec ./$(BIN) dev

## test: every test, against real Redis and PostgreSQL started on free loopback ports
test: deps test-deps
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	@mkdir -p .acv && rm -f .acv/test-timings.txt
	ACV_REQUIRE_BROWSER=1 ACV_TEST_TIMINGS=$(CURDIR)/.acv/test-timings.txt $(GO) test -race -count=1 -timeout 20m ./...; s=$$?; cat .acv/test-timings.txt 2>/dev/null; exit $$s
	./deploy/check.sh

build:
	$(GO) build -o $(BIN) ./cmd/acv

## loadtest: the four load scenarios (redeem, contention, reactivate, read mix) with the project's
## own Go load generator (cmd/acvload), against a local stack of their own (STACK=running: the one
## of make run); DURATION=15s each. No k6: loadtest/run-k6.sh runs the k6 scripts with yours
loadtest: deps build
	$(GO) build -o bin/acvload ./cmd/acvload
	./loadtest/run.sh

## bench: the same-run benchmark tables (ceilings, plain PostgreSQL, acv hot path on one Redis and
## on a 3-master Redis Cluster, sustained through a real one-node Kafka 4.4.0; CPU per verify of
## each process); Kafka needs a JDK and Maven (kafka-deps), nothing else of test-deps
bench: deps kafka-deps build
	$(GO) run ./loadtest/bench -acv $(BIN)

## test-deps: what the tests need beyond the local stack: prometheus and promtool (rule tests,
## the live dashboard check), docker-compose (validates the compose file; no engine needed), a
## Python virtual environment in .tools/venv (pytest for the Python SDK, which it runs from src/;
## flit_core, its build backend, for the install test; schemathesis against the OpenAPI
## document), the TypeScript SDK's npm packages, and the console's browser suite: Debian's
## Chromium and its Playwright and axe-core npm packages (internal/console/e2e)
test-deps: kafka-deps prometheus-deps $(TOOLS_STAMP)
	@command -v docker-compose >/dev/null || (echo "installing docker-compose"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null)
	@test -x /usr/bin/chromium || (echo "installing chromium"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	@test -f internal/console/e2e/node_modules/@playwright/test/cli.js -a -d internal/console/e2e/node_modules/@axe-core/playwright || (echo "installing the console's browser suite"; cd internal/console/e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent)

## kafka-deps: what real Apache Kafka needs (tests, `make run KAFKA=real`): a JDK, and Maven to
## fetch the broker's jars from Maven Central once into ~/.cache/acv
kafka-deps:
	@command -v java >/dev/null || (echo "installing a JDK"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless >/dev/null)
	@command -v mvn >/dev/null || (echo "installing maven"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null)

## prometheus-deps: Debian's Prometheus server and promtool (`make run PROMETHEUS=1`, the rule
## and dashboard tests)
prometheus-deps:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || (echo "installing prometheus"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null)

## deps: what the local stack needs on Debian: redis-server, PostgreSQL 15, openssl
deps:
	@command -v redis-server >/dev/null || (echo "installing redis-server"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null)
	@test -x $(PG_BIN)/postgres || (echo "installing postgresql-15"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 postgresql-contrib >/dev/null)
	@command -v openssl >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null)


$(TOOLS_STAMP): api/sdk/typescript/package.json
	@python3 -c 'import ensurepip' 2>/dev/null || (echo "installing python3-venv"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip >/dev/null)
	@command -v npm >/dev/null || (echo "installing npm"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null)
	rm -rf .tools && python3 -m venv .tools/venv
	.tools/venv/bin/pip install -q $(PY_TOOLS)
	cd api/sdk/typescript && npm install --no-audit --no-fund --silent
	touch $@

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## clean: remove the binary and make run's data, with a PostgreSQL cluster it kept outside .acv
clean:
	@if [ -f .acv/pg.location ]; then rm -rf "$$(cat .acv/pg.location)"; fi
	rm -rf bin .acv .tools api/sdk/typescript/node_modules
