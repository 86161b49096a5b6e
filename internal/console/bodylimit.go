package console

import (
	"errors"
	"mime"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// loginBodyBytes bounds a login's body, the form's and the API's: a username, a password of
// at most maxPasswordLen bytes, each percent- or JSON-escaped, and their framing fit in it
// several times over.
const loginBodyBytes = 4 << 10

// bodyLimit is the most a route's body may hold: its own limit, or MaxBodyBytes.
func (s *Server) bodyLimit(routeLimit int64) int64 {
	if routeLimit > 0 {
		return routeLimit
	}
	return s.cfg.MaxBodyBytes
}

// boundBody bounds what is read of the request's body from here on to limit bytes: a read
// past it fails with *http.MaxBytesError (errTooLarge's 413) and nothing more is read. The
// chains call it once the request may be read at all: at once for an anonymous route, after
// the session and role checks for the others, so a request without a session is refused
// without reading a byte of its body.
func boundBody(c *gin.Context, limit int64) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
}

// readForm reads a posted form, url-encoded or multipart, within the limit boundBody set, so
// the CSRF check, the UTF-8 check and the handler find it parsed; a form over the limit is a
// 413. A multipart form's files above 8 MiB are spilled to temporary files, as net/http does.
func readForm(c *gin.Context) error {
	switch mt, _, _ := mime.ParseMediaType(c.ContentType()); mt {
	case "application/x-www-form-urlencoded":
		// A pair with a malformed escape is dropped, as gin's c.PostForm drops it; only the
		// size is refused.
		return errTooLarge(c.Request.ParseForm())
	case "multipart/form-data":
		err := c.Request.ParseMultipartForm(8 << 20)
		if err == nil {
			return nil
		}
		if tooLarge := errTooLarge(err); tooLarge != nil {
			return tooLarge
		}
		return contract.Errorf(contract.KindInvalid, "The form cannot be read")
	}
	return nil
}

// errTooLarge is the 413 of a body read past its limit, nil when err is not that.
func errTooLarge(err error) error {
	var tooLarge *http.MaxBytesError
	if !errors.As(err, &tooLarge) {
		return nil
	}
	return contract.Errorf(contract.KindTooLarge, "Request body must be at most %d bytes", tooLarge.Limit)
}
