package console

import "testing"

// TestSpreadsheetSafe: a cell a spreadsheet would read as a formula gets a leading
// apostrophe; every other cell is kept as it is.
func TestSpreadsheetSafe(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"plain":             "plain",
		"=1+2":              "'=1+2",
		"+31 6 1234":        "'+31 6 1234",
		"-5":                "'-5",
		"@SUM(A1)":          "'@SUM(A1)",
		"\t=cmd":            "'\t=cmd",
		"\r=cmd":            "'\r=cmd",
		"a=b":               "a=b",
		"CODE_ALREADY_USED": "CODE_ALREADY_USED",
	} {
		if got := spreadsheetSafe(in); got != want {
			t.Errorf("spreadsheetSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
