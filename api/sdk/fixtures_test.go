package sdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// liveService is what an SDK suite runs against: a real API replica with the audit pipeline on
// real Redis and PostgreSQL, a proxy in front of it that can lose a response, and a fixtures
// endpoint through which the suite sets up projects and codes as an operator would.
type liveService struct {
	stack *testkit.Stack
	// Env is handed to the SDK's test runner: ACV_BASE_URL (the API), ACV_PROXY_URL (the same
	// API behind the proxy) and ACV_FIXTURES_URL.
	Env []string
}

// startLive starts the service and its fixtures. The fixtures endpoint answers:
//
//	POST /tenant      {"expires_at": 1700000000|null}  → {"project_id","key_id","secret"}
//	POST /codes       {"project_id","values":[…],"expires_at": …|null} → 204 (codes created)
//	POST /project     {"project_id","enabled": bool}   → 204 (project enabled or disabled)
//	POST /code        {"project_id","value","disabled": bool} → 204 (code disabled or enabled)
//	POST /revoke      {"key_id"}                        → 204 (API key revoked)
//	POST /lose-next   {}                                → 204: the proxy forwards the next
//	                  request to the API, lets it complete, then drops the connection without
//	                  an answer, as a client sees a response lost to a timeout or a network cut.
func startLive(t *testing.T) *liveService {
	t.Helper()
	s := testkit.NewStack(t)
	api := s.StartAPI()
	s.StartPipeline("relay-sdk")

	target, err := url.Parse(api)
	if err != nil {
		t.Fatal(err)
	}
	var loseNext atomic.Bool
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loseNext.CompareAndSwap(true, false) {
			forward.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		forward.ServeHTTP(rec, r) // the API commits the request; its answer never leaves
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	}))
	t.Cleanup(proxy.Close)

	fx := httptest.NewServer(fixtures(t, s, &loseNext))
	t.Cleanup(fx.Close)
	return &liveService{stack: s, Env: []string{
		"ACV_BASE_URL=" + api,
		"ACV_PROXY_URL=" + proxy.URL,
		"ACV_FIXTURES_URL=" + fx.URL,
	}}
}

// fixtures is the operator side of the SDK suites, over the same admin service the CLI uses.
func fixtures(t *testing.T, s *testkit.Stack, loseNext *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	type req struct {
		ProjectID string   `json:"project_id"`
		KeyID     string   `json:"key_id"`
		Values    []string `json:"values"`
		Value     string   `json:"value"`
		ExpiresAt *int64   `json:"expires_at"`
		Enabled   bool     `json:"enabled"`
		Disabled  bool     `json:"disabled"`
	}
	handle := func(path string, fn func(ctx context.Context, r req) (any, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, hr *http.Request) {
			var r req
			if err := json.NewDecoder(hr.Body).Decode(&r); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			out, err := fn(hr.Context(), r)
			if err != nil {
				t.Logf("fixture %s: %v", path, err)
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if out == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(out)
		})
	}
	handle("/tenant", func(ctx context.Context, r req) (any, error) {
		p, err := s.Admin.CreateProject(ctx, contract.NewProject{Name: "sdk", ExpiresAt: r.ExpiresAt})
		if err != nil {
			return nil, err
		}
		k, err := s.Admin.CreateAPIKey(ctx, p.ID, 0, 0)
		if err != nil {
			return nil, err
		}
		return map[string]string{"project_id": p.ID, "key_id": k.ID, "secret": k.Secret}, nil
	})
	handle("/codes", func(ctx context.Context, r req) (any, error) {
		codes := make([]contract.NewCode, len(r.Values))
		for i, v := range r.Values {
			codes[i] = contract.NewCode{Code: v, ExpiresAt: r.ExpiresAt}
		}
		rows, err := s.Deps.Store.InsertCodes(ctx, r.ProjectID, codes)
		if err != nil {
			return nil, err
		}
		return nil, s.Deps.Cache.PutCodes(ctx, r.ProjectID, rows)
	})
	handle("/project", func(ctx context.Context, r req) (any, error) {
		return nil, s.Admin.SetProjectEnabled(ctx, r.ProjectID, r.Enabled)
	})
	handle("/code", func(ctx context.Context, r req) (any, error) {
		return nil, s.Admin.SetCodeDisabled(ctx, r.ProjectID, r.Value, r.Disabled)
	})
	handle("/revoke", func(ctx context.Context, r req) (any, error) {
		return nil, s.Admin.RevokeAPIKey(ctx, r.KeyID)
	})
	handle("/lose-next", func(context.Context, req) (any, error) {
		loseNext.Store(true)
		return nil, nil
	})
	return mux
}
