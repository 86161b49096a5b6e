package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// TestEveryKindAnsweredByTheTable: a refusal of each kind is answered with the status
// contract.Kind.HTTPStatus names, the table the operator console answers by too
// (internal/console's TestEveryKindAnsweredByTheTable).
func TestEveryKindAnsweredByTheTable(t *testing.T) {
	s := &Server{cfg: Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	for _, k := range contract.Kinds {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest(http.MethodGet, "/api/v1/projects/x", nil)
		s.writeError(c, &contract.Error{Kind: k, Message: "Refused"})
		if w.Code != k.HTTPStatus() {
			t.Errorf("%s: status %d, want %d", k, w.Code, k.HTTPStatus())
		}
	}
}
