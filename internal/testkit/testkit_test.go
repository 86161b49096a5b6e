package testkit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// The shared servers hand every test its own database, its own Redis and its own broker.
func TestServersAreFreshPerTest(t *testing.T) {
	ctx := context.Background()
	a, b := testkit.PostgresDB(t), testkit.PostgresDB(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	for _, u := range []string{a, b} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var tables int
		err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables)
		conn.Close(ctx)
		if err != nil || tables != 0 {
			t.Fatalf("%s: %d tables (%v), want an empty database", u, tables, err)
		}
	}
	r := testkit.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("fresh redis holds %d keys (%v)", n, err)
	}
	if k := testkit.KafkaBroker(t, "t", 2); len(k.Brokers) == 0 {
		t.Fatal("no broker address")
	}
}

// The hand-built string to sign and signature are the contract's, checked against values
// computed outside Go (Python's hmac), so a mistake shared with api/contract cannot hide.
func TestHandSigning(t *testing.T) {
	body := []byte(`{"code":"A"}`)
	sts := testkit.StringToSign("POST", "/api/v1/projects/p/codes/verify", "", body, "1700000000", "nonce-0123456789ab")
	want := "POST\n/api/v1/projects/p/codes/verify\n\n45042674b6797b83a22a1978ad3ac657897000cf68d74757b83e946484955555\n1700000000\nnonce-0123456789ab"
	if sts != want {
		t.Fatalf("string to sign %q, want %q", sts, want)
	}
	if got := testkit.Sign("secret-hex-text", sts); got != "3b32811c04901bc044875ac3f1727799dc9fc9f500b56b3a499a6caab3cd702b" {
		t.Fatalf("signature %s", got)
	}
	if got := testkit.StringToSign("GET", "/p", "", nil, "1", ""); got != "GET\n/p\n\n"+contract.EmptyBodySHA256+"\n1" {
		t.Fatalf("five-line string to sign without nonce: %q", got)
	}
	for raw, want := range map[string]string{
		"": "",
		"status=unused&search=a%25b&page=1&page_size=5&search=x": "page=1&page_size=5&search=a%25b&search=x&status=unused",
		"b=2&a=1&b=1": "a=1&b=2&b=1",
	} {
		if got := testkit.SortQuery(raw); got != want {
			t.Errorf("SortQuery(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A signer sends the request exactly as described: the path verbatim, the headers signed.
func TestSignerSendsTheBytesAsBuilt(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"detail":"Nothing to see here."}`))
	}))
	defer srv.Close()
	sg := testkit.NewSigner(t, srv.Client(), srv.URL, contract.APIKey{ID: "key", Secret: "secret"})
	req := testkit.Request{Method: http.MethodGet, Path: "/x/A%2FB", Query: "b=1&a=2", Nonce: "nonce-0123456789ab", TS: 1700000000}
	r := sg.Send(req)
	if r.Status != http.StatusOK || string(r.Body) != `{"detail":"Nothing to see here."}` {
		t.Fatalf("answer %d %s", r.Status, r.Body)
	}
	wantSig := testkit.Sign("secret", testkit.StringToSign("GET", "/x/A%2FB", "a=2&b=1", nil, "1700000000", "nonce-0123456789ab"))
	if got.RequestURI != "/x/A%2FB?b=1&a=2" || got.Header.Get("X-Signature") != wantSig || got.Header.Get("X-API-Key") != "key" ||
		got.Header.Get("X-Timestamp") != "1700000000" || got.Header.Get("X-Nonce") != "nonce-0123456789ab" {
		t.Fatalf("sent %s with headers %v", got.RequestURI, got.Header)
	}
	req.Omit = "X-Nonce"
	sg.Send(req)
	if _, ok := got.Header["X-Nonce"]; ok {
		t.Fatal("an omitted header was sent")
	}
}

func TestWaitForAndClosed(t *testing.T) {
	ch := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(ch) })
	testkit.WaitFor(t, 5*time.Second, "the channel to close", testkit.Closed(ch))
	n := 0
	testkit.WaitFor(t, 5*time.Second, "three polls", func() (bool, string) { n++; return n == 3, "" })
}

// errRecorder is a testing.TB whose Errorf is recorded instead of failing the test.
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Errorf(format string, args ...any) { r.errs = append(r.errs, format) }

// The log guard passes ordinary lines and flags any that carries something shaped like a
// secret or a signature.
func TestLogSinkFlagsSecrets(t *testing.T) {
	rec := &errRecorder{TB: t}
	sink, logger := testkit.NewLogSink(rec)
	logger.Info("request", "key_id", contract.NewID(), "status", 200)
	if len(rec.errs) != 0 || len(sink.Lines()) != 1 {
		t.Fatalf("an ordinary line: %d errors, %d lines", len(rec.errs), len(sink.Lines()))
	}
	logger.Info("oops", "note", strings.Repeat("ab", 32))
	if len(rec.errs) != 1 || !strings.Contains(sink.Lines()[1], `"msg":"oops"`) {
		t.Fatalf("a line with a 64-hex value: %d errors; lines %q", len(rec.errs), sink.Lines())
	}
}
