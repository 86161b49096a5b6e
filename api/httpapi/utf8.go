package httpapi

import (
	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// requireUTF8 refuses, with a 400, a request whose query string or body is not valid UTF-8
// (contract.ValidateQueryUTF8, contract.ValidateBodyUTF8), before any handler decodes either:
// encoding/json would turn the invalid bytes into U+FFFD, so two different byte strings would
// name one code or be stored as one verified_by. It runs after authenticate, so a request is
// authenticated (401) and matched to its project (403) first, as for every other malformed
// request, and before the hot path, so a refused request spends neither its X-Nonce nor a token.
func (s *Server) requireUTF8(c *gin.Context) error {
	if err := contract.ValidateQueryUTF8(c.Request.URL.RawQuery); err != nil {
		return err
	}
	body, _ := c.Get(ctxBody)
	b, _ := body.([]byte)
	return contract.ValidateBodyUTF8(b)
}
