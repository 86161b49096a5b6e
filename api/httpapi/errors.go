package httpapi

import (
	"context"
	"errors"
	"net/http"

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

// writeError answers err with its status and {"detail"} and stops the chain. A refusal shows
// its own message; anything else is logged with its cause and shown as a bare 500, or as a 503
// when an adapter said its dependency is unavailable (KindUnavailable) or it looks like a
// dependency that is down or slow. A 503 never shows its cause.
func (s *Server) writeError(c *gin.Context, err error) {
	var ce *contract.Error
	if errors.As(err, &ce) && ce.Kind != contract.KindInternal && ce.Kind != contract.KindUnavailable {
		var af *authFailure
		if errors.As(err, &af) {
			s.countAuthFailure(c, af.reason)
		}
		c.AbortWithStatusJSON(ce.Kind.HTTPStatus(), contract.ErrorBody{Detail: ce.Message})
		return
	}
	s.cfg.Logger.ErrorContext(c.Request.Context(), "request failed", "err", err, "route", c.FullPath())
	if contract.KindOf(err) == contract.KindUnavailable || isUnavailable(err) {
		// A dependency down or slow is usually back within moments (a failover, a restart):
		// clients that honour Retry-After (api/client, the SDKs) retry after a second rather
		// than at once, all together.
		c.Header("Retry-After", unavailableRetryAfter)
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, contract.ErrorBody{Detail: "Service temporarily unavailable"})
		return
	}
	c.AbortWithStatusJSON(http.StatusInternalServerError, contract.ErrorBody{Detail: "Internal server error"})
}

// unavailableRetryAfter is a 503's Retry-After, in seconds.
const unavailableRetryAfter = "1"

// isUnavailable tells whether err looks like a dependency being down or slow rather than a bug.
func isUnavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	var oe interface{ Temporary() bool }
	return errors.As(err, &oe)
}

// invalid is a 400 with detail.
func invalid(detail string) error {
	return &contract.Error{Kind: contract.KindInvalid, Message: detail}
}
