package safecsv

import (
	"encoding/csv"
	"io"
)

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
