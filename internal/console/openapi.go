package console

import (
	_ "embed" // the document is embedded
	"net/http"

	"github.com/gin-gonic/gin"
)

// The admin API's OpenAPI 3.1 document, embedded so the binary serves exactly the document the
// tests hold against Routes() and against live answers.
//
//go:embed openapi.yaml
var openAPI []byte

// OpenAPIContentType is the media type the document is served with (RFC 9512).
const OpenAPIContentType = "application/yaml"

// OpenAPI returns the admin API's OpenAPI document, internal/console/openapi.yaml. The slice is
// a copy: a caller may keep or change it without touching what the server serves.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// openAPIDoc serves the document without a session: it holds no data, and an integrator reads
// it before having an account.
func (s *Server) openAPIDoc(c *gin.Context, _ *Session) error {
	c.Data(http.StatusOK, OpenAPIContentType, openAPI)
	return nil
}
