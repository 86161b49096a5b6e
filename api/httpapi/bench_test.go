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
)

// benchRecords and benchHot stand in for Postgres and Redis so the benchmark measures the HTTP
// layer's own CPU per verify: routing, authentication, validation, rendering, metrics, spans.
// They hold no lock and record nothing, unlike the test fakes, so the parallel benchmark
// measures no contention of its own.
type benchRecords struct{ key contract.APIKey }

func (f benchRecords) APIKey(context.Context, string) (contract.APIKey, error) { return f.key, nil }
func (benchRecords) Project(context.Context, string) (contract.Project, error) {
	return contract.Project{}, nil
}
func (benchRecords) Statistics(context.Context, string, int64) (contract.Statistics, error) {
	return contract.Statistics{}, nil
}
func (benchRecords) CodeByValue(context.Context, string, string) (contract.CodeRecord, error) {
	return contract.CodeRecord{}, contract.ErrNotFound
}
func (benchRecords) CodeByID(context.Context, string, string) (contract.CodeRecord, error) {
	return contract.CodeRecord{}, contract.ErrNotFound
}
func (benchRecords) ListCodes(context.Context, string, contract.ListQuery, int64) ([]contract.CodeRecord, int64, error) {
	return nil, 0, nil
}
func (benchRecords) Logs(context.Context, string, int) ([]contract.LogEntry, error) { return nil, nil }
func (benchRecords) ProjectStatistics(context.Context, string, int64, int) (contract.Statistics, []contract.RecentVerification, error) {
	return contract.Statistics{}, nil, nil
}

type benchHot struct{}

func (benchHot) Verify(_ context.Context, op contract.Operation) (contract.OperationResult, error) {
	return contract.OperationResult{Outcome: contract.Outcome{Action: op.Action, Code: op.Code, CodeID: "01a20000000000000000000000000000",
		VerifiedAt: op.Now.UnixMilli(), At: op.Now.UnixMilli()}, Rate: contract.RateState{Remaining: -1}}, nil
}
func (h benchHot) Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	return h.Verify(ctx, op)
}
func (benchHot) Admit(context.Context, contract.Admission) (contract.RateState, error) {
	return contract.RateState{Remaining: -1}, nil
}
func (benchHot) LiveCode(context.Context, string, string) (contract.CodeRecord, bool, error) {
	return contract.CodeRecord{}, false, nil
}

// BenchmarkVerifyHandler is the HTTP layer's CPU per signed verify, without network or stores.
func BenchmarkVerifyHandler(b *testing.B) {
	key := contract.APIKey{ID: contract.NewID(), ProjectID: contract.NewID(), Secret: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ProjectEnabled: true}
	srv, err := httpapi.New(httpapi.Config{Records: benchRecords{key}, HotPath: benchHot{},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
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
			srv.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}
