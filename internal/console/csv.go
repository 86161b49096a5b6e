package console

import (
	"encoding/csv"
	"io"
	"strings"
)

// spreadsheetSafe keeps a cell from being read as a formula by a spreadsheet that opens the
// export: a value starting with = + - @ (or a tab or carriage return, which some spreadsheets
// skip before looking) gets a leading apostrophe. Values in these exports come from outside —
// a verifier's name, a reason, a username, an audit detail — so a row could otherwise carry
// =HYPERLINK(…) into an operator's spreadsheet (OWASP's "CSV injection").
func spreadsheetSafe(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// safeCSV writes CSV rows with every cell made spreadsheetSafe; encoding/csv does the quoting.
type safeCSV struct {
	w   *csv.Writer
	row []string
}

func newSafeCSV(w io.Writer) *safeCSV { return &safeCSV{w: csv.NewWriter(w)} }

// Write writes one row.
func (c *safeCSV) Write(cells ...string) error {
	c.row = c.row[:0]
	for _, s := range cells {
		c.row = append(c.row, spreadsheetSafe(strings.ToValidUTF8(s, "\uFFFD")))
	}
	return c.w.Write(c.row)
}

// Flush writes what is buffered and reports the first error of any write.
func (c *safeCSV) Flush() error {
	c.w.Flush()
	return c.w.Error()
}
