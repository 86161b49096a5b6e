package safecsv_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/acv/acv/internal/safecsv"
)

// TestWriterRowsReadBack: what a Writer writes, a Reader reads as the same rows, whatever the
// cells hold — formula starts, apostrophes, CSV's own quotes, commas and line breaks — and no
// cell of the file, as a spreadsheet parses it, starts a formula.
func TestWriterRowsReadBack(t *testing.T) {
	rows := [][]string{
		{"id", "code", "verified_by"},
		{"1", "=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0"},
		{"2", "-5", "@SUM(A1:A9)"},
		{"3", "\t=1", "\r=1"},
		{"4", "'=1", "''"},
		{"5", "'", "'abc"},
		{"6", "", "a,b\n\"c\""},
		{"7", "plain", "\n=1"},
	}
	var buf bytes.Buffer
	w := safecsv.NewWriter(&buf)
	for _, r := range rows {
		if err := w.Write(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}

	raw, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		for _, cell := range r {
			if cell != "" && strings.ContainsRune("=+-@\t\r\n", rune(cell[0])) {
				t.Errorf("cell %q of the file starts a formula", cell)
			}
		}
	}

	r := safecsv.NewReader(bytes.NewReader(buf.Bytes()))
	for i := 0; ; i++ {
		got, err := r.Read()
		if errors.Is(err, io.EOF) {
			if i != len(rows) {
				t.Fatalf("read %d rows, wrote %d", i, len(rows))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(rows) || !slices.Equal(got, rows[i]) {
			t.Fatalf("row %d read as %q, written %q", i, got, rows)
		}
	}
}

// TestWriterReplacesInvalidUTF8: a cell that is not UTF-8 is written with U+FFFD for each bad
// byte, so the file is valid UTF-8.
func TestWriterReplacesInvalidUTF8(t *testing.T) {
	var buf bytes.Buffer
	w := safecsv.NewWriter(&buf)
	if err := w.Write("a\xffb"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "a\uFFFDb\n" {
		t.Fatalf("wrote %q", got)
	}
}

// TestReaderKeepsTheGuardUnderCRLF: encoding/csv reads a CRLF inside a quoted cell as LF (a
// property of CSV reading, not of the escape), and the guard is still removed.
func TestReaderKeepsTheGuardUnderCRLF(t *testing.T) {
	var buf bytes.Buffer
	w := safecsv.NewWriter(&buf)
	if err := w.Write("\r\n=1"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := safecsv.NewReader(&buf).Read()
	if err != nil || len(got) != 1 || got[0] != "\n=1" {
		t.Fatalf("read %q, %v; want [\"\\n=1\"]", got, err)
	}
}
