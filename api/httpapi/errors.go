package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// abort answers with the contract's error body and stops the chain.
func abort(c *gin.Context, status int, detail string) {
	c.AbortWithStatusJSON(status, contract.ErrorBody{Detail: detail})
}

// fail answers an internal error. The cause is logged, never shown: a dependency that timed
// out or is unreachable is a 503, anything else a 500.
func (s *Server) fail(c *gin.Context, what string, err error) {
	s.cfg.Logger.ErrorContext(c.Request.Context(), what, "err", err, "route", c.FullPath())
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || isUnavailable(err) {
		abort(c, http.StatusServiceUnavailable, "Service temporarily unavailable")
		return
	}
	abort(c, http.StatusInternalServerError, "Internal server error")
}

// isUnavailable tells whether err looks like a dependency being down rather than a bug.
func isUnavailable(err error) bool {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	var oe interface{ Temporary() bool }
	return errors.As(err, &oe)
}
