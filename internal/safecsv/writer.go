package safecsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

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
