package console

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/gin-gonic/gin"
)

// statusError is a refusal whose status the contract's kinds do not name (405, 415).
type statusError struct {
	status int
	detail string
}

func (e *statusError) Error() string { return e.detail }

var errMethodNotAllowed = &statusError{http.StatusMethodNotAllowed, "Method not allowed"}

// handle adapts a handler that returns an error: nil means it answered (or, for middleware,
// that the chain goes on); anything else is answered by writeError.
func (s *Server) handle(h func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.writeError(c, err)
		}
	}
}

// refusal is how an error is answered: its status, the detail shown, and for a lock or a 503
// the seconds to wait (Retry-After). A refusal shows its own message; anything else is logged
// with its cause and answered 500, or 503 when a dependency is down or slow, with a detail that
// says nothing internal. The API (writeError) and the pages (renderError) both answer by it.
func (s *Server) refusal(c *gin.Context, err error) (status int, detail string, retryAfter int) {
	var (
		se     *statusError
		locked *LockedError
		nf     *admin.NotFoundError
		ce     *contract.Error
		cc     *admin.CountChangedError
	)
	switch {
	case errors.As(err, &cc):
		return http.StatusConflict, capitalize(cc.Error()), 0
	case errors.As(err, &se):
		return se.status, se.detail, 0
	case errors.As(err, &locked):
		return http.StatusTooManyRequests, locked.Error(), max(1, int(math.Ceil(locked.Wait.Seconds())))
	case errors.As(err, &nf):
		return http.StatusNotFound, capitalize(nf.Error()), 0
	case errors.As(err, &ce) && ce.Kind != contract.KindInternal && ce.Kind != contract.KindUnavailable:
		return ce.Kind.HTTPStatus(), ce.Message, 0
	}
	s.log.ErrorContext(c.Request.Context(), "console: request failed", "err", err, "route", c.FullPath())
	if contract.KindOf(err) == contract.KindUnavailable || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable, "Service temporarily unavailable", 1
	}
	return http.StatusInternalServerError, "Internal server error", 0
}

// writeError answers err with its status and {"detail"} and stops the chain.
func (s *Server) writeError(c *gin.Context, err error) {
	status, detail, wait := s.refusal(c, err)
	if wait > 0 {
		c.Header("Retry-After", strconv.Itoa(wait))
	}
	c.AbortWithStatusJSON(status, contract.ErrorBody{Detail: detail})
}
