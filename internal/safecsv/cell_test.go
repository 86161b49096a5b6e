package safecsv_test

import (
	"testing"

	"github.com/acv/acv/internal/safecsv"
)

// formulaStarts are the first characters a spreadsheet reads as a formula, or skips before
// looking for one.
var formulaStarts = []byte{'=', '+', '-', '@', '\t', '\r', '\n'}

// TestEscape: a cell a spreadsheet would read as a formula gets a leading apostrophe, and so
// does a cell that already starts with one; every other cell is kept as it is.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"plain":             "plain",
		"=1+2":              "'=1+2",
		"+31 6 1234":        "'+31 6 1234",
		"-5":                "'-5",
		"@SUM(A1)":          "'@SUM(A1)",
		"\t=cmd":            "'\t=cmd",
		"\r=cmd":            "'\r=cmd",
		"\n=cmd":            "'\n=cmd",
		"'":                 "''",
		"'=1+2":             "''=1+2",
		"'plain":            "''plain",
		"a=b":               "a=b",
		" =1":               " =1",
		"CODE_ALREADY_USED": "CODE_ALREADY_USED",
	} {
		if got := safecsv.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnescape: one apostrophe is removed only where Escape put it — before a guarded
// character; a cell written by hand with an apostrophe before anything else is kept.
func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		"":        "",
		"'":       "'",
		"''":      "'",
		"'''":     "''",
		"'=1+2":   "=1+2",
		"''=1+2":  "'=1+2",
		"'\t=cmd": "\t=cmd",
		"'\r=cmd": "\r=cmd",
		"'-5":     "-5",
		"'abc":    "'abc",
		"''abc":   "'abc",
		"=1+2":    "=1+2", // a file not written by an export: read as it is
		"a'=b":    "a'=b",
	} {
		if got := safecsv.Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEscapeIsReversibleAndSafe: for every value, Unescape(Escape(v)) is v and Escape(v)
// does not start with a formula character. The values are each formula start, the apostrophe
// and ordinary characters, alone and in every pair and triple, so every prefix the rule looks
// at is covered.
func TestEscapeIsReversibleAndSafe(t *testing.T) {
	alphabet := append([]byte{'\'', 'a', ' ', '"', ','}, formulaStarts...)
	values := []string{""}
	for _, a := range alphabet {
		values = append(values, string(a))
		for _, b := range alphabet {
			values = append(values, string([]byte{a, b}))
			for _, c := range alphabet {
				values = append(values, string([]byte{a, b, c}))
			}
		}
	}
	escaped := map[string]string{}
	for _, v := range values {
		checkReversible(t, v)
		e := safecsv.Escape(v)
		if prev, dup := escaped[e]; dup {
			t.Errorf("Escape(%q) = Escape(%q) = %q", v, prev, e)
		}
		escaped[e] = v
	}
}

// FuzzEscape checks the same for any value (go test -fuzz FuzzEscape ./internal/safecsv/).
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "'", "''=", "'=x", "=x", "\t", "\r\n", "@", "-1", "+1"} {
		f.Add(s)
	}
	f.Fuzz(checkReversible)
}

func checkReversible(t *testing.T, v string) {
	t.Helper()
	e := safecsv.Escape(v)
	if got := safecsv.Unescape(e); got != v {
		t.Errorf("Unescape(Escape(%q)) = %q (escaped %q)", v, got, e)
	}
	for _, c := range formulaStarts {
		if e != "" && e[0] == c {
			t.Errorf("Escape(%q) = %q starts with %q", v, e, c)
		}
	}
}
