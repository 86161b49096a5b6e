package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
)

// fakeRecords and fakeHot stand in for Postgres and Redis so the benchmark measures the HTTP
// layer's own CPU per verify: routing, authentication, validation, rendering, metrics, spans.
type fakeRecords struct{ key store.APIKey }

func (f fakeRecords) APIKey(context.Context, string) (store.APIKey, error) { return f.key, nil }
func (fakeRecords) Project(context.Context, string) (contract.Project, error) {
	return contract.Project{}, nil
}
func (fakeRecords) Statistics(context.Context, string, int64) (contract.Statistics, error) {
	return contract.Statistics{}, nil
}
func (fakeRecords) CodeByValue(context.Context, string, string) (store.CodeRow, error) {
	return store.CodeRow{}, store.ErrNotFound
}
func (fakeRecords) CodeByID(context.Context, string, string) (store.CodeRow, error) {
	return store.CodeRow{}, store.ErrNotFound
}
func (fakeRecords) ListCodes(context.Context, string, store.ListQuery, int64) ([]store.CodeRow, int64, error) {
	return nil, 0, nil
}
func (fakeRecords) Logs(context.Context, string, int) ([]contract.LogEntry, error) { return nil, nil }

type fakeHot struct{}

func (fakeHot) Apply(_ context.Context, c cache.Call) (cache.Result, error) {
	return cache.Result{Outcome: contract.Outcome{Action: c.Action, Code: c.Code, CodeID: "01a20000000000000000000000000000",
		VerifiedAt: c.Now.UnixMilli(), At: c.Now.UnixMilli()}, Rate: cache.RateState{Remaining: -1}}, nil
}
func (fakeHot) Admit(context.Context, cache.Admission) (cache.Result, error) {
	return cache.Result{}, nil
}
func (fakeHot) PutCode(context.Context, string, cache.CodeState) (bool, error) {
	return true, nil
}
func (fakeHot) LoadProject(context.Context, cache.ProjectState) error { return nil }
func (fakeHot) MarkUnknown(context.Context, string, string, time.Duration) error {
	return nil
}
func (fakeHot) Code(context.Context, string, string) (cache.CodeState, bool, error) {
	return cache.CodeState{}, false, cache.ErrNotCached
}

// BenchmarkVerifyHandler is the HTTP layer's CPU per signed verify, without network or stores.
func BenchmarkVerifyHandler(b *testing.B) {
	key := store.APIKey{ID: contract.NewID(), ProjectID: contract.NewID(), Secret: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ProjectEnabled: true}
	srv, err := httpapi.New(httpapi.Config{Records: fakeRecords{key}, HotPath: fakeHot{},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	path := "/api/v1/projects/" + key.ProjectID + "/codes/verify"
	body := []byte(`{"code":"ABCDEFGHJKLM","verified_by":"till-1"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			nonce := "nonce-" + strconv.Itoa(i) + "-abcdefghijklmnop"
			sig := contract.Sign(key.Secret, contract.StringToSign("POST", path, "", contract.BodySHA256(body), ts, nonce))
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("X-API-Key", key.ID)
			req.Header.Set("X-Timestamp", ts)
			req.Header.Set("X-Nonce", nonce)
			req.Header.Set("X-Signature", sig)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}
