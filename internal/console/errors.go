package console

import (
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

var errMethodNotAllowed = &contract.Error{Kind: contract.KindMethodNotAllowed, Message: "Method not allowed"}

// handle adapts a handler that returns an error: nil means it answered (or, for middleware,
// that the chain goes on); anything else is answered by writeError.
func (s *Server) handle(h func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.writeError(c, err)
		}
	}
}

// refusal is how an error is answered, as contract.Answer says (the same table as the client
// API's): its status, the detail shown, and the seconds to wait (Retry-After). An error of ours
// is logged with its cause. The API (writeError) and the pages (renderError) both answer by it.
func (s *Server) refusal(c *gin.Context, err error) (status int, detail string, retryAfter int) {
	status, detail, retryAfter, internal := contract.Answer(err)
	if internal {
		s.log.ErrorContext(c.Request.Context(), "console: request failed", "err", err, "route", c.FullPath())
	}
	return status, capitalize(detail), retryAfter
}

// refused tells whether err is a refusal the caller is shown, not a fault of ours.
func refused(err error) bool {
	k := contract.KindOf(err)
	return k != contract.KindInternal && k != contract.KindUnavailable
}

// writeError answers err with its status and {"detail"} and stops the chain.
func (s *Server) writeError(c *gin.Context, err error) {
	status, detail, wait := s.refusal(c, err)
	if wait > 0 {
		c.Header("Retry-After", strconv.Itoa(wait))
	}
	c.AbortWithStatusJSON(status, contract.ErrorBody{Detail: detail})
}
