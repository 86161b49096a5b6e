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
	"time"

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

// TestEveryKindAnsweredByTheTable: a refusal of each kind is answered with the status
// contract.Kind.HTTPStatus names, the table the client API answers by too (api/httpapi's
// TestEveryKindAnsweredByTheTable); a wait becomes Retry-After in whole seconds.
func TestEveryKindAnsweredByTheTable(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, k := range contract.Kinds {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest(http.MethodGet, "/admin/api/v1/projects", nil)
		s.writeError(c, &contract.Error{Kind: k, Message: "Refused", Wait: 1500 * time.Millisecond})
		if w.Code != k.HTTPStatus() {
			t.Errorf("%s: status %d, want %d", k, w.Code, k.HTTPStatus())
		}
		if k != contract.KindInternal && k != contract.KindUnavailable && w.Header().Get("Retry-After") != "2" {
			t.Errorf("%s: Retry-After %q, want 2", k, w.Header().Get("Retry-After"))
		}
	}
}
