package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// TestUnavailableSaysRetryAfter: the console answers a dependency down or slow with 503 and
// Retry-After, as the client API does, and never shows the cause.
func TestUnavailableSaysRetryAfter(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, err := range []error{
		contract.Unavailable(errors.New("FATAL: the database system is starting up at 10.0.0.3")),
		fmt.Errorf("list codes: %w", context.DeadlineExceeded),
	} {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest(http.MethodGet, "/admin/api/v1/projects", nil)
		s.writeError(c, err)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%v: status %d, Retry-After %q; want 503 and 1", err, w.Code, w.Header().Get("Retry-After"))
		}
		if body := w.Body.String(); body != `{"detail":"Service temporarily unavailable"}` {
			t.Errorf("%v: body %s", err, body)
		}
	}
}
