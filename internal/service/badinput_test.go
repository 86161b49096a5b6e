package service_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// TestBadInput sends every kind of malformed request the contract names to a running stack:
// each is refused with the contract's status and a {"detail": sentence} body, and changes
// nothing. The code it names stays unused, no verification log is written, and its X-Nonce is
// not spent: the corrected request, sent afterwards with the same nonce, is accepted.
func TestBadInput(t *testing.T) {
	s := testkit.NewStack(t)
	base := s.StartAPI()
	s.StartPipeline("relay")
	tn := s.NewTenant(nil)
	sg := s.Signer(t, base, tn.Key)
	vpath, rpath := testkit.VerifyPath(tn.ProjectID), ReactivatePath(tn.ProjectID)
	long := func(n int) string { return strings.Repeat("x", n) }

	cases := testkit.BadBodies(vpath, rpath)
	values := make([]string, len(cases))
	for i := range cases {
		values[i] = testkit.BadBodyValue(i)
	}
	s.ImportCodes(tn.ProjectID, nil, values...)
	nonces := make([]string, len(cases))

	t.Run("body", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				body := []byte(c.Body)
				if strings.Contains(c.Body, "%[1]s") {
					body = []byte(fmt.Sprintf(c.Body, values[i]))
				}
				if c.Status == 413 && c.Name != "1 MiB body" && len(body) != contract.MaxBodyBytes+1 {
					t.Fatalf("test body is %d bytes, want %d", len(body), contract.MaxBodyBytes+1)
				}
				nonces[i] = testkit.Nonce()
				r := sg.With(t).Send(testkit.Request{Method: http.MethodPost, Path: c.Path, Body: body, Nonce: nonces[i], Chunked: c.Chunked})
				WantDetail(t, r, c.Status, c.Mention)
				if code := sg.With(t).Code(tn.ProjectID, values[i]); code.Status || code.VerifiedAt != nil {
					t.Fatalf("%s after a refused request: %+v", values[i], code)
				}
			})
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		// The corrected request with the nonce of the refused one is accepted and redeems the
		// code; once the pipeline delivered its log, that log is the code's only one.
		for i, v := range values {
			if nonces[i] == "" {
				continue
			}
			var o Outcome
			sg.With(t).Send(testkit.Request{Method: http.MethodPost, Path: vpath, Body: []byte(`{"code":"` + v + `"}`), Nonce: nonces[i]}).
				Decode(t, http.StatusOK, &o)
			if !o.Success {
				t.Errorf("%s (%s): the corrected verify answered %+v", v, cases[i].Name, o)
			}
		}
		for i, v := range values {
			t.Run(cases[i].Name, func(t *testing.T) { s.WaitLogs(t, s.CodeID(t, tn.ProjectID, v), 1) })
		}
	})

	t.Run("limits accepted", func(t *testing.T) {
		// The limits count characters, not bytes, and are inclusive; a body of exactly 64 KiB
		// is accepted.
		code := strings.Repeat("é", contract.MaxCodeLen)
		by := strings.Repeat("ü", contract.MaxByLen)
		reason := strings.Repeat("ß", contract.MaxReasonLen)
		s.ImportCodes(tn.ProjectID, nil, code, "BI-EXACT")
		var o Outcome
		sg.With(t).Post(vpath, map[string]any{"code": code, "verified_by": by}, nil).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("verify of a 100-character code: %+v", o)
		}
		sg.With(t).Post(rpath, map[string]any{"code": code, "reactivated_by": by, "reason": reason}, nil).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("reactivate with 100-character reactivated_by and 500-character reason: %+v", o)
		}
		body := []byte(`{"code":"BI-EXACT"}`)
		body = append(body, bytes.Repeat([]byte(" "), contract.MaxBodyBytes-len(body))...)
		sg.With(t).Send(testkit.Request{Method: http.MethodPost, Path: vpath, Body: body, Nonce: testkit.Nonce()}).Decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("verify with a body of exactly 64 KiB: %+v", o)
		}
		s.WaitLogs(t, s.CodeID(t, tn.ProjectID, code), 2)
		c := sg.With(t).Code(tn.ProjectID, code)
		if l := c.VerificationLogs; len(l) != 2 || Deref(l[0].Reason) != reason || Deref(l[0].VerifiedBy) != by || Deref(l[1].VerifiedBy) != by {
			t.Fatalf("logs of the 100-character code: %+v", l)
		}
	})

	t.Run("query and path", func(t *testing.T) {
		list := testkit.ProjectPath(tn.ProjectID) + "/codes"
		byCode := testkit.ProjectPath(tn.ProjectID) + "/codes/by-code/"
		for _, c := range []struct {
			name, path, query, mention string
		}{
			{"unknown status", list, "status=active", "status"},
			{"status in upper case", list, "status=USED", "status"},
			{"page 0", list, "page=0", "page"},
			{"negative page", list, "page=-1", "page"},
			{"page abc", list, "page=abc", "page"},
			{"fractional page", list, "page=1.5", "page"},
			{"empty page", list, "page=", "page"},
			{"page_size 0", list, "page_size=0", "page_size"},
			{"page_size 101", list, "page_size=101", "page_size"},
			{"page_size abc", list, "page_size=abc", "page_size"},
			{"search with a control character", list, "search=a%01b", "search"},
			{"search of 101 characters", list, "search=" + long(101), "search"},
			{"by-code with U+0001", byCode + "A%01B", "", "control"},
			{"by-code with NUL", byCode + "%00", "", "control"},
			{"by-code of 101 characters", byCode + long(101), "", "100"},
			{"by-code not UTF-8", byCode + "A%FFB", "", "UTF-8"},
		} {
			t.Run(c.name, func(t *testing.T) {
				sg := sg.With(t)
				nonce := testkit.Nonce()
				WantDetail(t, sg.Send(testkit.Request{Method: http.MethodGet, Path: c.path, Query: c.query, Nonce: nonce}), http.StatusBadRequest, c.mention)
				// The refused read did not spend its nonce.
				if r := sg.Send(testkit.Request{Method: http.MethodGet, Path: list, Query: "page=1", Nonce: nonce}); r.Status != http.StatusOK {
					t.Fatalf("a correct read with the nonce of the refused one: %d %s", r.Status, r.Body)
				}
			})
		}
		// The contract (shared/contract.md): "status=all and an empty status mean no filter";
		// they are not bad input, and list what the unfiltered list does.
		all := sg.With(t).Page(tn.ProjectID, "page_size=100")
		for _, q := range []string{"status=", "status=all"} {
			if p := sg.With(t).Page(tn.ProjectID, q+"&page_size=100"); p.Total != all.Total || !slices.Equal(Values(p.Items), Values(all.Items)) {
				t.Errorf("%s lists %v (total %d), want the unfiltered %v (total %d)", q, Values(p.Items), p.Total, Values(all.Items), all.Total)
			}
		}
	})
}
