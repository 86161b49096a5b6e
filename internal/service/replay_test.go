package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// A request's replay identity (its nonce, or its signature without one) has one marker, spent
// whatever unsigned headers come with it. These tests capture signed requests as an attacker
// on the wire would, let the code's state change so that a replay would be accepted if it
// passed the replay check, and send each captured request again under every combination of
// the unsigned headers a client can vary: never accepted.

// TestSDKShapedRequestReplayedWithoutIdempotencyKey is the captured SDK request of the
// security review: a verify signed with a fresh nonce and sent with an Idempotency-Key (as
// both SDKs send every verify), the code reactivated by another request, then the first
// request sent again byte for byte without its Idempotency-Key. It must be 401, not a second
// redemption; the same holds the other way round (captured without the header, replayed with
// it) and for a captured refund replayed after the customer redeemed again.
func TestSDKShapedRequestReplayedWithoutIdempotencyKey(t *testing.T) {
	testkit.OnEachRedis(t, testSDKShapedRequestReplayedWithoutIdempotencyKey)
}

func testSDKShapedRequestReplayedWithoutIdempotencyKey(t *testing.T) {
	s := testkit.NewStack(t)
	bases := s.StartAPIs(2)
	tn := s.NewTenant(nil)
	s.ImportCodes(tn.ProjectID, nil, "SDK-1", "SDK-2", "SDK-3")
	first, second := s.Signer(t, bases[0], tn.Key), s.Signer(t, bases[1], tn.Key)
	vpath, rpath := testkit.VerifyPath(tn.ProjectID), ReactivatePath(tn.ProjectID)
	idem := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }

	t.Run("captured with the header, replayed without", func(t *testing.T) {
		captured := signedPost(vpath, `{"code":"SDK-1","verified_by":"checkout"}`, idem("order-1"))
		wantOutcome(t, first.With(t).Send(captured), true)
		wantOutcome(t, second.With(t).Post(rpath, map[string]any{"code": "SDK-1"}, nil), true)
		replay := captured
		replay.Header = nil
		WantDetail(t, second.With(t).Send(replay), http.StatusUnauthorized, "Request replayed")
		if c := first.With(t).Code(tn.ProjectID, "SDK-1"); c.Status {
			t.Fatalf("the replayed verify redeemed SDK-1 again: %+v", c)
		}
	})
	t.Run("captured without the header, replayed with it", func(t *testing.T) {
		captured := signedPost(vpath, `{"code":"SDK-2"}`, nil)
		wantOutcome(t, first.With(t).Send(captured), true)
		wantOutcome(t, first.With(t).Post(rpath, map[string]any{"code": "SDK-2"}, nil), true)
		replay := captured
		replay.Header = idem("order-2")
		WantDetail(t, second.With(t).Send(replay), http.StatusUnauthorized, "Request replayed")
		if c := first.With(t).Code(tn.ProjectID, "SDK-2"); c.Status {
			t.Fatalf("the replayed verify redeemed SDK-2 again: %+v", c)
		}
	})
	t.Run("a captured refund replayed after a new redemption", func(t *testing.T) {
		wantOutcome(t, first.With(t).Post(vpath, map[string]any{"code": "SDK-3"}, idem("order-3")), true)
		refund := signedPost(rpath, `{"code":"SDK-3","reason":"refund"}`, idem("refund-3"))
		wantOutcome(t, first.With(t).Send(refund), true)
		wantOutcome(t, second.With(t).Post(vpath, map[string]any{"code": "SDK-3"}, idem("order-3b")), true)
		for _, h := range []http.Header{nil, idem("refund-3b")} {
			replay := refund
			replay.Header = h
			WantDetail(t, second.With(t).Send(replay), http.StatusUnauthorized, "Request replayed")
		}
		if c := first.With(t).Code(tn.ProjectID, "SDK-3"); !c.Status {
			t.Fatalf("the replayed refund reopened SDK-3: %+v", c)
		}
	})
}

// TestCapturedRequestsNeverReplay is the property: for captured verifies, reactivates and
// reads, with and without X-Nonce, with and without an Idempotency-Key, of an unlimited key, a
// leased rate-limited key and a bucket-limited key, after the state changed, every resend
// through either replica under every combination of Idempotency-Key (absent, the same,
// another), other unsigned headers (none, added, changed) and header-name letter case is 401
// "Request replayed", and the code's state is the one the intervening request left.
func TestCapturedRequestsNeverReplay(t *testing.T) {
	testkit.OnEachRedis(t, testCapturedRequestsNeverReplay)
}

func testCapturedRequestsNeverReplay(t *testing.T) {
	s := testkit.NewStack(t)
	bases := s.StartAPIs(2)
	tn := s.NewTenant(nil)
	ctx := context.Background()
	keys := map[string]contract.APIKey{"unlimited": tn.Key}
	for name, l := range map[string][2]float64{"leased": {2000, 2000}, "bucket": {1, 2000}} {
		k, err := s.Admin.CreateAPIKey(ctx, tn.ProjectID, l[0], int(l[1]))
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = k
	}
	vpath, rpath := testkit.VerifyPath(tn.ProjectID), ReactivatePath(tn.ProjectID)

	idemVariants := map[string]func(captured http.Header) http.Header{
		"idempotency key absent": func(http.Header) http.Header { return http.Header{} },
		"idempotency key same": func(c http.Header) http.Header {
			h := http.Header{}
			for k, v := range c {
				h[k] = v
			}
			return h
		},
		"idempotency key other": func(http.Header) http.Header {
			return http.Header{"Idempotency-Key": {"other-" + testkit.Nonce()}}
		},
	}
	otherHeaders := map[string]http.Header{
		"no other headers": {},
		"other headers added": {
			"X-Forwarded-For": {"203.0.113.7"}, "Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
			"User-Agent": {"replayer/1.0"}, "X-Request-Id": {"r-1"}, "Accept": {"*/*"},
		},
		"content type changed": {"Content-Type": {"text/plain; charset=utf-8"}, "X-Forwarded-For": {"198.51.100.1, 10.0.0.1"}},
	}
	spellings := map[string]func(string) string{
		"canonical": http.CanonicalHeaderKey, "lower case": strings.ToLower, "upper case": strings.ToUpper,
	}

	type capture struct {
		name    string
		code    string
		req     testkit.Request
		isRead  bool
		before  func(sg *testkit.Signer) // puts the code in the state the captured request needs
		after   func(sg *testkit.Signer) // the intervening change a replay would exploit
		usedNow bool                     // the code's state once after ran
	}
	var captures []capture
	n := 0
	for keyName := range keys {
		for _, withNonce := range []bool{true, false} {
			for _, withIdem := range []bool{true, false} {
				n++
				code, refunded := fmt.Sprintf("CAP-%d", n), fmt.Sprintf("CAP-%d-R", n)
				s.ImportCodes(tn.ProjectID, nil, code, refunded)
				var hdr, refundHdr http.Header
				if withIdem {
					hdr = http.Header{"Idempotency-Key": {"capture-" + code}}
					refundHdr = http.Header{"Idempotency-Key": {"refund-" + code}}
				}
				shape := fmt.Sprintf("nonce %t, idempotency key %t", withNonce, withIdem)
				verify := signedPost(vpath, `{"code":"`+code+`","verified_by":"till"}`, hdr)
				refund := signedPost(rpath, `{"code":"`+refunded+`","reason":"refund"}`, refundHdr)
				if !withNonce {
					verify.Nonce, refund.Nonce = "", ""
				}
				captures = append(captures,
					capture{name: "verify, " + shape + ", " + keyName, code: code, req: verify,
						after: func(sg *testkit.Signer) {
							wantOutcome(t, sg.Post(rpath, map[string]any{"code": code}, nil), true)
						}},
					capture{name: "reactivate, " + shape + ", " + keyName, code: refunded, req: refund,
						before: func(sg *testkit.Signer) {
							wantOutcome(t, sg.Post(vpath, map[string]any{"code": refunded}, nil), true)
						},
						after: func(sg *testkit.Signer) {
							wantOutcome(t, sg.Post(vpath, map[string]any{"code": refunded}, nil), true)
						}, usedNow: true})
			}
		}
		read := testkit.Request{Method: http.MethodGet, Path: testkit.ByCodePath(tn.ProjectID, "CAP-1"),
			Nonce: testkit.Nonce(), TS: time.Now().Unix()}
		captures = append(captures, capture{name: "read with a nonce, " + keyName, req: read, isRead: true})
	}

	for _, cp := range captures {
		keyName := strings.TrimSpace(cp.name[strings.LastIndex(cp.name, ",")+1:])
		key := keys[keyName]
		t.Run(cp.name, func(t *testing.T) {
			sg := s.Signer(t, bases[0], key)
			// The captured request is accepted once, then the state changes.
			if cp.isRead {
				if r := sg.Send(cp.req); r.Status != http.StatusOK {
					t.Fatalf("captured read: %d %s", r.Status, r.Body)
				}
			} else {
				if cp.before != nil {
					cp.before(sg)
				}
				wantOutcome(t, sg.Send(cp.req), true)
				cp.after(s.Signer(t, bases[1], key))
			}
			for _, base := range bases {
				replayer := s.Signer(t, base, key)
				for idemName, idemOf := range idemVariants {
					for otherName, other := range otherHeaders {
						for spelling, spell := range spellings {
							hdr := idemOf(cp.req.Header)
							for k, v := range other {
								hdr[k] = v
							}
							replay := replayer.Build(withoutHeader(cp.req))
							respell(replay.Header, hdr, spell)
							r := testkit.Do(t, s.HTTP, replay)
							if r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), "Request replayed") {
								t.Fatalf("replay through %s, %s, %s, %s: %d %s; want 401 Request replayed",
									base, idemName, otherName, spelling, r.Status, r.Body)
							}
						}
					}
				}
			}
			if !cp.isRead {
				if c := sg.Code(tn.ProjectID, cp.code); c.Status != cp.usedNow {
					t.Fatalf("%s after the replays: used %t, want %t", cp.code, c.Status, cp.usedNow)
				}
			}
		})
	}

	// One identity, one marker, whatever the method: a nonce spent by a read is spent for a
	// verify too, and a nonce spent on one code is spent on any other, in any shard.
	t.Run("a nonce is one identity across methods and codes", func(t *testing.T) {
		sg := s.Signer(t, bases[0], tn.Key)
		values := []string{"NONCE-A", "NONCE-B", "NONCE-C", "NONCE-D", "NONCE-E", "NONCE-F"}
		s.ImportCodes(tn.ProjectID, nil, values...)
		nonce := testkit.Nonce()
		if r := sg.Send(testkit.Request{Method: http.MethodGet, Path: testkit.ProjectPath(tn.ProjectID), Nonce: nonce}); r.Status != http.StatusOK {
			t.Fatalf("read: %d %s", r.Status, r.Body)
		}
		for _, v := range values {
			req := signedPost(vpath, `{"code":"`+v+`"}`, http.Header{"Idempotency-Key": {"n-" + v}})
			req.Nonce = nonce
			WantDetail(t, s.Signer(t, bases[1], tn.Key).Send(req), http.StatusUnauthorized, "Request replayed")
			if c := sg.Code(tn.ProjectID, v); c.Status {
				t.Fatalf("a reused nonce redeemed %s", v)
			}
		}
	})
}

// signedPost is a POST with a fresh nonce and a fixed timestamp, so that sending it twice
// sends the same signed request.
func signedPost(path, body string, hdr http.Header) testkit.Request {
	return testkit.Request{Method: http.MethodPost, Path: path, Body: []byte(body), Nonce: testkit.Nonce(),
		TS: time.Now().Unix(), Header: hdr}
}

// withoutHeader is r with no extra headers: the replay's headers are set by respell.
func withoutHeader(r testkit.Request) testkit.Request {
	r.Header = nil
	return r
}

// respell sets extra on h and writes every header name of h, the signed ones included, as
// spell spells it. Go's client sends a header name as the map holds it.
func respell(h http.Header, extra http.Header, spell func(string) string) {
	for k, v := range extra {
		h[k] = v
	}
	for k, v := range h {
		delete(h, k)
		h[spell(k)] = v
	}
}

// wantOutcome requires a 200 outcome with the given success.
func wantOutcome(t *testing.T, r testkit.Response, success bool) {
	t.Helper()
	var o struct {
		Success bool `json:"success"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &o) != nil || o.Success != success {
		t.Fatalf("answer %d %s, want 200 with success %t", r.Status, r.Body, success)
	}
}
