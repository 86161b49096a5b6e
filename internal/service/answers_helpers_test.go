package service_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/acv/acv/internal/testkit"
)

// ReactivatePath is the path of a project's reactivate endpoint.
func ReactivatePath(projectID string) string {
	return testkit.ProjectPath(projectID) + "/codes/reactivate"
}

// WantDetail checks an error answer: the status, a body that is exactly {"detail": sentence},
// and that the sentence names mention when set. It returns the sentence.
func WantDetail(t testing.TB, r testkit.Response, status int, mention string) string {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	m := r.Fields(t)
	if len(m) != 1 {
		t.Errorf("error body has members other than detail: %s", r.Body)
	}
	var detail string
	if err := json.Unmarshal(m["detail"], &detail); err != nil {
		t.Fatalf("detail is not a string: %s", r.Body)
	}
	WantSentence(t, detail)
	if mention != "" && !strings.Contains(strings.ToLower(detail), strings.ToLower(mention)) {
		t.Errorf("detail %q does not mention %q", detail, mention)
	}
	return detail
}

// WantSentence checks that a detail reads as an English sentence for a person, not as an
// internal error: several words, printable, no Go or driver error text.
func WantSentence(t testing.TB, s string) {
	t.Helper()
	if len(strings.Fields(s)) < 2 {
		t.Errorf("detail %q is not a sentence", s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			t.Errorf("detail %q holds a non-printable character %U", s, r)
		}
	}
	for _, leak := range []string{"json:", "strconv", "*string", "pgx", "redis", "sql", "unexpected EOF", "%!", "panic"} {
		if strings.Contains(strings.ToLower(s), strings.ToLower(leak)) {
			t.Errorf("detail %q leaks internals (%q)", s, leak)
		}
	}
}

// Outcome is a verify or reactivate answer with every JSON member either action may carry,
// decoded by hand rather than with the api/contract type under test.
type Outcome struct {
	Success       bool    `json:"success"`
	CodeID        *string `json:"code_id"`
	Code          string  `json:"code"`
	VerifiedAt    *int64  `json:"verified_at"`
	ReactivatedAt *int64  `json:"reactivated_at"`
	Message       string  `json:"message"`
	ErrorCode     *string `json:"error_code"`
}
