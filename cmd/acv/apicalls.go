package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/acv/acv/internal/plural"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
)

// batch is what acv codes generate reads of a generation batch.
type batch struct {
	ID        string `json:"id"`
	Requested int    `json:"requested"`
	Done      int    `json:"done"`
	Status    string `json:"status"`
	Error     string `json:"error"`
}

// batchPoll is how often generate reads its batch's progress.
const batchPoll = 250 * time.Millisecond

// generate starts a generation batch on the server and follows it to its end: the server runs
// it, so a closed terminal does not stop it, and the console shows it.
func generate(ctx context.Context, c *adminclient.Client, project, name string, spec contract.GenerateSpec) error {
	body := map[string]any{"name": name, "count": spec.Count, "length": spec.Length, "charset": spec.Charset,
		"prefix": spec.Prefix, "suffix": spec.Suffix, "expires_at": spec.ExpiresAt}
	var b batch
	if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "projects", project, "generate"), body, &b); err != nil {
		return err
	}
	bar := newProgress("generating", int64(b.Requested))
	path := adminclient.Path(nil, "projects", project, "batches", b.ID)
	for b.Status != "done" && b.Status != "failed" && b.Status != "cancelled" {
		select {
		case <-ctx.Done():
			bar.Finish()
			return fmt.Errorf("stopped following batch %s, which goes on on the server (acv codes list, or the console): %w", b.ID, ctx.Err())
		case <-time.After(batchPoll):
		}
		if err := c.Do(ctx, http.MethodGet, path, nil, &b); err != nil {
			bar.Finish()
			return err
		}
		bar.Set(b.Done)
	}
	bar.Finish()
	fmt.Fprintf(os.Stderr, "generated %s in batch %s (%s)\n", plural.N(b.Done, "code", "codes"), b.ID, b.Status)
	if b.Status != "done" {
		return fmt.Errorf("batch %s %s: %s", b.ID, b.Status, b.Error)
	}
	return nil
}

// copyCSV copies an export to w and counts its codes (the rows after the header).
func copyCSV(w io.Writer, r io.Reader) (int, error) {
	cr := csv.NewReader(io.TeeReader(r, w))
	cr.FieldsPerRecord = -1
	n := -1
	for {
		_, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return max(n, 0), nil
		}
		if err != nil {
			return max(n, 0), fmt.Errorf("read the export: %w", err)
		}
		n++
	}
}

// readLine reads one line, without its line end: a password or a token given on standard input.
func readLine(r io.Reader) (string, error) {
	s, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && s != "") {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}
