package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
)

// An answer that is ready long after the request's deadline, as when the handler's goroutine
// waits for a CPU on a loaded machine, still reaches the client over TCP: the result if there
// is one, a 503 with {"detail"} if the deadline cut the work short. The connection is never
// closed without an answer, which a client without retries would see as EOF.
func TestLateAnswerReachesClient(t *testing.T) {
	const requestTimeout = 100 * time.Millisecond
	// Past the request's deadline and past the five seconds more that the write deadline of
	// net/http's Server.WriteTimeout used to allow from the request's arrival.
	const late = requestTimeout + 5*time.Second + 500*time.Millisecond
	cases := []struct {
		name   string
		err    error
		status int
	}{
		{"result", nil, http.StatusOK},
		{"deadline passed", context.DeadlineExceeded, http.StatusServiceUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.reconfigure(t, func(c *httpapi.Config) { c.RequestTimeout = requestTimeout })
			e.hot.operate = func(op contract.Operation) (contract.OperationResult, error) {
				time.Sleep(late)
				o := contract.Outcome{Action: op.Action, Code: op.Code, CodeID: codeID1, VerifiedAt: now * 1000}
				return contract.OperationResult{Outcome: o, Rate: contract.RateState{Remaining: -1}}, tc.err
			}
			addr := serveTCP(t, e)
			hr := req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"SPRING-1"}`)}.build()
			hr.RequestURI, hr.URL.Scheme, hr.URL.Host = "", "http", addr
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(hr)
			if err != nil {
				t.Fatalf("no answer to a request answered after %v: %v", late, err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("read body: %v", err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, body)
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, body)
			}
			if _, ok := m["detail"]; ok != (tc.status != http.StatusOK) {
				t.Fatalf("body %s for status %d", body, resp.StatusCode)
			}
		})
	}
}
