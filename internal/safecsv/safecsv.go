// Package safecsv is the one CSV format of every file acv writes for people (the code, log and
// admin audit exports) and the reader acv codes import reads them back with. Their values come
// from outside, and a spreadsheet runs a cell starting with = + - or @ as a formula (OWASP's
// "CSV injection"): Escape makes every cell safe, Unescape undoes exactly that.
package safecsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// Guard is the prefix Escape puts before a cell a spreadsheet would read as a formula: an
// apostrophe, which spreadsheets take as "this cell is text" and do not show.
const Guard = '\''

// guarded tells whether a cell starting with byte c gets Guard before it, for Escape and
// Unescape alike. = + - @ start a formula; some spreadsheets skip a tab, CR or LF first. Guard
// itself is guarded so escaping stays reversible: `'=x` is not read back as an escaped `=x`.
func guarded(c byte) bool {
	switch c {
	case '=', '+', '-', '@', '\t', '\r', '\n', Guard:
		return true
	}
	return false
}

// Escape is how every export writes a cell: Guard before a value that starts with a guarded
// character, every other value as it is.
func Escape(cell string) string {
	if cell != "" && guarded(cell[0]) {
		return string(Guard) + cell
	}
	return cell
}

// Unescape is how an import reads a cell, the inverse of Escape: Unescape(Escape(v)) == v.
func Unescape(cell string) string {
	if len(cell) >= 2 && cell[0] == Guard && guarded(cell[1]) {
		return cell[1:]
	}
	return cell
}

// Reader reads CSV rows with every cell unescaped; rows may have any number of fields.
type Reader struct {
	r *csv.Reader
}

// NewReader returns a Reader that reads from r.
func NewReader(r io.Reader) *Reader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &Reader{r: cr}
}

// Read reads one row, in a slice the next call reuses. Errors are encoding/csv's, unwrapped
// (a *csv.ParseError says where; reading goes on after it); io.EOF ends the file.
func (c *Reader) Read() ([]string, error) {
	rec, err := c.r.Read()
	for i, s := range rec {
		rec[i] = Unescape(s)
	}
	return rec, err
}

// FieldPos is the line and column where field of the row Read last returned starts.
func (c *Reader) FieldPos(field int) (line, column int) { return c.r.FieldPos(field) }

// Writer writes CSV rows with every cell escaped, so no export can forget a cell.
type Writer struct {
	w   *csv.Writer
	row []string
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w)} }

// Write writes one row; a byte that is not valid UTF-8 becomes U+FFFD.
func (c *Writer) Write(cells ...string) error {
	c.row = c.row[:0]
	for _, s := range cells {
		c.row = append(c.row, Escape(strings.ToValidUTF8(s, "\uFFFD")))
	}
	if err := c.w.Write(c.row); err != nil {
		return fmt.Errorf("write csv row: %w", err)
	}
	return nil
}

// Flush writes what is buffered and reports the first error of any write.
func (c *Writer) Flush() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}
