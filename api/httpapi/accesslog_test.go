package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
)

// At the default level the access log holds the requests refused or failed, one line each,
// and none of the answered ones; at debug level every request has its line.
func TestAccessLogLevels(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			e := newEnv(t)
			e.reconfigure(t, func(c *httpapi.Config) {
				c.Logger = slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: level}))
			})
			e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "SPRING-1", CreatedAt: now - 60})
			requests := []struct {
				r      req
				status int
			}{
				{req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"SPRING-1"}`), nonce: newNonce()}, http.StatusOK},
				// A business failure is an answer too: 200 with success false.
				{req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"SPRING-1"}`), nonce: newNonce()}, http.StatusOK},
				{req{path: projectPath(projectA)}, http.StatusOK},
				{req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":`), nonce: newNonce()}, http.StatusBadRequest},
				{req{path: projectPath(projectA), sig: strings.Repeat("0", 64)}, http.StatusUnauthorized},
			}
			for _, r := range requests {
				if w := e.do(r.r); w.Code != r.status {
					t.Fatalf("%s %s: %d %s, want %d", r.r.method, r.r.path, w.Code, w.Body, r.status)
				}
			}
			var statuses []string
			for _, line := range strings.Split(strings.TrimSpace(e.log.String()), "\n") {
				if strings.Contains(line, "msg=request") {
					f := strings.Fields(line[strings.Index(line, "status="):])
					statuses = append(statuses, strings.TrimPrefix(f[0], "status="))
				}
			}
			want := "400 401"
			if level == slog.LevelDebug {
				want = "200 200 200 400 401"
			}
			if got := strings.Join(statuses, " "); got != want {
				t.Errorf("access lines with statuses %q, want %q; log:\n%s", got, want, e.log)
			}
		})
	}
}
