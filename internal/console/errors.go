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

// writeError answers err with its status and {"detail"} and stops the chain. A refusal shows
// its own message; anything else is logged with its cause and answered 500, or 503 when a
// dependency is down or slow, with a detail that says nothing internal.
func (s *Server) writeError(c *gin.Context, err error) {
	var (
		se     *statusError
		locked *LockedError
		nf     *admin.NotFoundError
		ce     *contract.Error
	)
	switch {
	case errors.As(err, &se):
		c.AbortWithStatusJSON(se.status, contract.ErrorBody{Detail: se.detail})
	case errors.As(err, &locked):
		wait := max(1, int(math.Ceil(locked.Wait.Seconds())))
		c.Header("Retry-After", strconv.Itoa(wait))
		c.AbortWithStatusJSON(http.StatusTooManyRequests, contract.ErrorBody{Detail: locked.Error()})
	case errors.As(err, &nf):
		c.AbortWithStatusJSON(http.StatusNotFound, contract.ErrorBody{Detail: capitalize(nf.Error())})
	case errors.As(err, &ce) && ce.Kind != contract.KindInternal && ce.Kind != contract.KindUnavailable:
		c.AbortWithStatusJSON(ce.Kind.HTTPStatus(), contract.ErrorBody{Detail: ce.Message})
	default:
		s.log.ErrorContext(c.Request.Context(), "console: request failed", "err", err, "route", c.FullPath())
		if contract.KindOf(err) == contract.KindUnavailable || errors.Is(err, context.DeadlineExceeded) {
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, contract.ErrorBody{Detail: "Service temporarily unavailable"})
			return
		}
		c.AbortWithStatusJSON(http.StatusInternalServerError, contract.ErrorBody{Detail: "Internal server error"})
	}
}
