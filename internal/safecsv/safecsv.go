// Package safecsv is the one CSV format of every file acv writes for people — the code export
// (admin API, console, acv codes export), the verification log export and the admin audit
// export — and the reader acv codes import uses to read those files back.
//
// The values in these files come from outside: a code value, the verified_by an API client
// sent, a reason, a username. A spreadsheet that opens the file reads a cell starting with
// = + - or @ as a formula (OWASP's "CSV injection"), so =HYPERLINK(…) would reach an operator.
// Escape decides, for every cell of every export, how a cell is made safe; Unescape undoes
// exactly that, so what an export wrote imports as the values it held.
package safecsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// Guard is the prefix Escape puts before a cell a spreadsheet would otherwise read as a
// formula: an apostrophe. Spreadsheets take a leading apostrophe as "this cell is text" and do
// not show it, so an operator sees the value itself.
const Guard = '\''

// guarded tells whether a cell starting with byte c is written with Guard before it: the one
// place that decides, so Escape and Unescape never disagree. = + - @ start a formula; some
// spreadsheets skip a tab, CR or LF before looking further (and encoding/csv reads a quoted CR LF
// back as a lone LF, still guarded). Guard itself is in the set so that escaping stays
// reversible: `'=x` gets a second apostrophe, so the reader cannot take it for an escaped `=x`.
func guarded(c byte) bool {
	switch c {
	case '=', '+', '-', '@', '\t', '\r', '\n', Guard:
		return true
	}
	return false
}

// Escape is how every export writes a cell: a value starting with = + - @, a tab, a carriage
// return, a line feed or an apostrophe gets an apostrophe before it; every other value is
// written as it is. (encoding/csv then quotes the cell where CSV needs it.)
func Escape(cell string) string {
	if cell != "" && guarded(cell[0]) {
		return string(Guard) + cell
	}
	return cell
}

// Unescape is how an import reads a cell: the inverse of Escape. An apostrophe followed by a
// character Escape guards is removed; any other cell, one apostrophe followed by an ordinary
// character included, is read as it is. Unescape(Escape(v)) == v for every v.
func Unescape(cell string) string {
	if len(cell) >= 2 && cell[0] == Guard && guarded(cell[1]) {
		return cell[1:]
	}
	return cell
}

// Reader reads CSV rows with every cell unescaped (Unescape): the rows a Writer wrote come back
// as the values it was given. Rows may have any number of fields, as files written by hand do.
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

// Read reads one row. The slice is reused by the next call (its strings are not). Errors are
// encoding/csv's, unwrapped: a *csv.ParseError says where the file went wrong, and the reader
// goes on after the malformed row; io.EOF ends the file.
func (c *Reader) Read() ([]string, error) {
	rec, err := c.r.Read()
	for i, s := range rec {
		rec[i] = Unescape(s)
	}
	return rec, err
}

// FieldPos is the line and column where field of the row Read last returned starts.
func (c *Reader) FieldPos(field int) (line, column int) { return c.r.FieldPos(field) }

// Writer writes CSV rows with every cell escaped (Escape); encoding/csv does the quoting. Every
// export writes through it, so no export can forget a cell.
type Writer struct {
	w   *csv.Writer
	row []string
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w)} }

// Write writes one row. A cell that is not valid UTF-8 has each bad byte replaced by U+FFFD,
// so the file stays valid UTF-8 for the spreadsheet and the reader.
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
