package httpapi

import (
	"errors"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

var errMethodNotAllowed = &contract.Error{Kind: contract.KindMethodNotAllowed, Message: "Method not allowed"}

// handle adapts a handler that returns an error: a nil error means the handler answered (or,
// for middleware, that the chain goes on); any other is answered by writeError.
func (s *Server) handle(h func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.writeError(c, err)
		}
	}
}

// writeError answers err as contract.Answer says and stops the chain; an error of ours is
// logged with its cause. A 503 never shows its cause.
func (s *Server) writeError(c *gin.Context, err error) {
	status, detail, retryAfter, internal := contract.Answer(err)
	if internal {
		s.cfg.Logger.ErrorContext(c.Request.Context(), "request failed", "err", err, "route", c.FullPath())
	}
	var af *authFailure
	if !internal && errors.As(err, &af) {
		s.countAuthFailure(c, af.reason)
	}
	if retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(retryAfter))
	}
	c.AbortWithStatusJSON(status, contract.ErrorBody{Detail: detail})
}

// invalid is a 400 with detail.
func invalid(detail string) error {
	return &contract.Error{Kind: contract.KindInvalid, Message: detail}
}
