package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/plural"
	"github.com/spf13/cobra"
)

func codesCmd() *cobra.Command {
	var project, expires, batchName string
	var spec contract.GenerateSpec
	gen := apiCmd(&cobra.Command{
		Use:   "generate",
		Short: "Generate random codes, unique within the project",
		PreRunE: func(*cobra.Command, []string) (err error) {
			spec.ExpiresAt, err = parseTime(expires)
			return err
		},
	}, "generate codes", func(ctx context.Context, c *adminclient.Client, _ []string) error {
		return generate(ctx, c, project, batchName, spec)
	})
	gen.Flags().IntVar(&spec.Count, "count", 100, "how many codes")
	gen.Flags().IntVar(&spec.Length, "length", 12, "random characters per code")
	gen.Flags().StringVar(&spec.Charset, "charset", admin.DefaultCharset, "characters to draw from")
	gen.Flags().StringVar(&spec.Prefix, "prefix", "", "text before the random part")
	gen.Flags().StringVar(&spec.Suffix, "suffix", "", "text after the random part")
	gen.Flags().StringVar(&expires, "expires-at", "", "code expiry (Unix seconds or RFC 3339)")
	gen.Flags().StringVar(&batchName, "batch", "cli", "the batch's name (shown in the console, revocable as a whole)")

	var dryRun bool
	var in *os.File
	imp := apiCmd(&cobra.Command{
		Use:   "import FILE.csv",
		Short: "Import codes from CSV (code[,expires_at]); '-' reads standard input",
		Long: "Import codes from CSV (code[,expires_at]); '-' reads standard input.\n\n" +
			"Every row is checked: the good rows are imported, the invalid ones, repeats within the file and codes\n" +
			"the project already holds are skipped and listed by line. --dry-run writes nothing. The command\n" +
			"fails when a row is invalid, so a script notices.\n\n" +
			"Cells are read as acv codes export writes them: one apostrophe before a cell starting with = + - @,\n" +
			"a tab, CR, LF or another apostrophe is removed, so '=1+2 imports the code =1+2 and ''x the code 'x.",
		Args: cobra.ExactArgs(1),
		PreRunE: func(_ *cobra.Command, args []string) (err error) {
			in = os.Stdin
			if args[0] != "-" {
				in, err = os.Open(args[0])
			}
			return err
		},
	}, "import codes", func(ctx context.Context, c *adminclient.Client, args []string) error {
		defer in.Close()
		verb := "importing"
		if dryRun {
			verb = "checking"
		}
		fmt.Fprintf(os.Stderr, "%s %s\n", verb, args[0])
		q := url.Values{"dry_run": {strconv.FormatBool(dryRun)}}
		resp, err := c.Send(ctx, http.MethodPost, adminclient.Path(q, "projects", project, "import"), "text/csv", in)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var rep contract.ImportReport
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			return fmt.Errorf("read the import report: %w", err)
		}
		printImportReport(os.Stderr, rep)
		if rep.Invalid > 0 {
			return fmt.Errorf("%s not imported", plural.N(rep.Invalid, "invalid row", "invalid rows"))
		}
		return nil
	})
	imp.Flags().BoolVar(&dryRun, "dry-run", false, "check every row and report the problem rows without writing anything")

	var out *os.File
	exp := apiCmd(&cobra.Command{
		Use:   "export [FILE.csv]",
		Short: "Export the project's codes as CSV, to FILE.csv or (without it, or -) standard output",
		Args:  cobra.MaximumNArgs(1),
		Long: "Export the project's codes as CSV.\n\n" +
			"The file is safe to open in a spreadsheet: a cell starting with = + - @, a tab, CR, LF or an apostrophe\n" +
			"is written with an apostrophe before it, which a spreadsheet takes as \"text\" and does not show, so no\n" +
			"value runs as a formula. acv codes import removes it again: the file imports as the codes it holds.",
		PreRunE: func(_ *cobra.Command, args []string) (err error) {
			out = os.Stdout
			if len(args) == 1 && args[0] != "-" {
				out, err = os.Create(args[0])
			}
			return err
		},
	}, "export codes", func(ctx context.Context, c *adminclient.Client, _ []string) error {
		defer out.Close()
		resp, err := c.Send(ctx, http.MethodGet, adminclient.Path(nil, "projects", project, "export"), "", nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := copyCSV(out, resp.Body)
		fmt.Fprintf(os.Stderr, "exported %s\n", plural.N(n, "code", "codes"))
		return err
	})
	toggle := func(use string) *cobra.Command {
		return apiCmd(&cobra.Command{
			Use:   use + " CODE...",
			Short: use + " codes (takes effect at once)",
			Args:  cobra.MinimumNArgs(1),
		}, use+" codes", func(ctx context.Context, c *adminclient.Client, args []string) error {
			for _, v := range args {
				if err := doPrint(ctx, c, http.MethodPost, adminclient.Path(nil, "projects", project, "codes", v, use), nil,
					"code %s %sd in project %s\n", v, use, project); err != nil {
					return err
				}
			}
			return nil
		})
	}
	dis, en := toggle("disable"), toggle("enable")
	list, show := codesListCmd(&project), codesShowCmd(&project)
	projectFlag(&project, gen, imp, exp, dis, en, list, show)
	return group(&cobra.Command{Use: "codes", Short: "Generate, import, export, list, show, disable and enable codes"},
		gen, imp, exp, dis, en, list, show)
}

func codesListCmd(project *string) *cobra.Command {
	var status, search string
	var page, pageSize int
	cmd := outputCmd(command("list --project PROJECT_ID", "List a project's codes, a page at a time, optionally by status or a search", cobra.NoArgs),
		"list codes", func([]string) string {
			v := url.Values{"page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(pageSize)}}
			if search != "" {
				v.Set("search", search)
			}
			if status != "" && status != "all" {
				v.Set("status", status)
			}
			return adminclient.Path(v, "projects", *project, "codes")
		}, func(pg contract.CodePage) [][]string {
			fmt.Fprintf(os.Stderr, "page %d of %d (%s)\n", pg.Page, pg.TotalPages, plural.N(pg.Total, "code", "codes"))
			rows := [][]string{{"CODE", "STATE", "EXPIRES_AT", "VERIFIED_AT", "VERIFIED_BY", "ID"}}
			for _, c := range pg.Items {
				rows = append(rows, []string{c.Code, codeState(c), fmtTime(c.ExpiresAt), fmtTime(c.VerifiedAt), fmtStr(c.VerifiedBy), c.ID})
			}
			return rows
		})
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if page < 1 {
			return errors.New("--page must be at least 1")
		}
		if pageSize < 1 || pageSize > contract.MaxPageSize {
			return fmt.Errorf("--page-size must be 1 to %d", contract.MaxPageSize)
		}
		if status != "" && status != "all" {
			st, err := contract.ParseState(status)
			if err != nil {
				return fmt.Errorf("--status %q: use unused, used, disabled, expired or all", status)
			}
			status = string(st)
		}
		return nil
	}
	cmd.Flags().StringVar(&status, "status", "", "only codes in this state: unused, used, disabled, expired (or all)")
	cmd.Flags().StringVar(&search, "search", "", "only codes whose value contains this text (case-insensitive)")
	cmd.Flags().IntVar(&page, "page", 1, "page number, from 1")
	cmd.Flags().IntVar(&pageSize, "page-size", contract.DefaultPageSize, "codes per page")
	return cmd
}

func codeState(c contract.Code) string {
	switch {
	case c.IsDisabled:
		return string(contract.StateDisabled)
	case c.Status:
		return string(contract.StateUsed)
	case c.IsExpired:
		return string(contract.StateExpired)
	}
	return string(contract.StateUnused)
}

func codesShowCmd(project *string) *cobra.Command {
	return outputCmd(command("show --project PROJECT_ID CODE", "Show one code with its verification history", cobra.ExactArgs(1)), "read codes",
		func(a []string) string { return adminclient.Path(nil, "projects", *project, "codes", a[0]) }, func(c contract.CodeWithHistory) [][]string {
			rows := [][]string{
				{"FIELD", "VALUE"},
				{"code", c.Code.Code}, {"id", c.ID}, {"state", string(c.State)},
				{"expires_at", fmtTime(c.ExpiresAt)}, {"verified_at", fmtTime(c.VerifiedAt)},
				{"verified_by", fmtStr(c.VerifiedBy)}, {"created_at", fmtUnix(c.CreatedAt)},
				{""}, {fmt.Sprintf("verification history (%s, newest first)", plural.N(len(c.VerificationLogs), "entry", "entries"))},
				{"AT", "ACTION", "RESULT", "BY", "IP", "REASON"},
			}
			for _, l := range c.VerificationLogs {
				rows = append(rows, []string{fmtUnix(l.VerifiedAt), l.Action, l.Result, fmtStr(l.VerifiedBy), l.IPAddress, fmtStr(l.Reason)})
			}
			return rows
		})
}

// batch is what acv codes generate reads of a generation batch.
type batch struct {
	ID        string `json:"id"`
	Requested int    `json:"requested"`
	Done      int    `json:"done"`
	Status    string `json:"status"`
	Error     string `json:"error"`
}

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
	var err error
	for err == nil && b.Status != "done" && b.Status != "failed" && b.Status != "cancelled" {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("stopped following batch %s, which goes on on the server (acv codes list, or the console): %w", b.ID, ctx.Err())
		case <-time.After(batchPoll):
			if err = c.Do(ctx, http.MethodGet, path, nil, &b); err == nil {
				bar.Set(b.Done)
			}
		}
	}
	bar.Finish()
	if err != nil {
		return err
	}
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

// printImportReport writes an import's totals and its problem rows, one a line, as an
// operator reads them to fix the file.
func printImportReport(w io.Writer, rep contract.ImportReport) {
	verb := "imported"
	if rep.DryRun {
		verb = "would be imported (dry run: nothing written)"
	}
	fmt.Fprintf(w, "read %s: %s %s, %d already present, %d repeated in the file, %d invalid\n",
		plural.N(rep.Read, "row", "rows"), plural.N(rep.Inserted, "new code", "new codes"), verb, rep.Existing, rep.Duplicates, rep.Invalid)
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "line %d: %s %q: %s\n", e.Line, e.Kind, e.Value, e.Reason)
	}
	if rep.Truncated {
		fmt.Fprintf(w, "(only the first %d problem rows are listed)\n", admin.MaxRowErrors)
	}
}

// batchCmd reads and stops the code generation batches (acv codes generate, the console's
// generation) and revokes a batch's codes as a whole.
func batchCmd() *cobra.Command {
	var project string
	list := outputCmd(command("list --project PROJECT_ID", "List a project's generation batches, newest first", cobra.NoArgs), "list batches",
		func([]string) string { return adminclient.Path(nil, "projects", project, "batches") }, func(bs items[json.RawMessage]) [][]string {
			rows := [][]string{{"ID", "NAME", "STATUS", "DONE", "REQUESTED", "CREATED_BY", "CREATED_AT", "REVOKED_AT"}}
			for _, raw := range bs {
				var b struct {
					batch
					Name      string `json:"name"`
					CreatedBy string `json:"created_by"`
					CreatedAt int64  `json:"created_at"`
					RevokedAt *int64 `json:"revoked_at"`
				}
				_ = json.Unmarshal(raw, &b)
				rows = append(rows, []string{b.ID, b.Name, b.Status, strconv.Itoa(b.Done), strconv.Itoa(b.Requested),
					b.CreatedBy, fmtUnix(b.CreatedAt), fmtTime(b.RevokedAt)})
			}
			return rows
		})
	path := func(id string, action ...string) string {
		return adminclient.Path(nil, append([]string{"projects", project, "batches", id}, action...)...)
	}
	show := apiCmd(command("show --project PROJECT_ID BATCH_ID", "Show a batch and its progress (JSON)", cobra.ExactArgs(1)),
		"read batches", func(ctx context.Context, c *adminclient.Client, args []string) error {
			return doJSON[json.RawMessage](ctx, c, http.MethodGet, path(args[0]), nil)
		})
	cancel := apiCmd(command("cancel --project PROJECT_ID BATCH_ID", "Stop a running batch (the codes already made stay)", cobra.ExactArgs(1)),
		"cancel batches", func(ctx context.Context, c *adminclient.Client, args []string) error {
			b, err := adminclient.Call[batch](ctx, c, http.MethodPost, path(args[0], "cancel"), nil)
			if err != nil {
				return err
			}
			fmt.Printf("batch %s: %s, made %d of %d\n", b.ID, b.Status, b.Done, b.Requested)
			return nil
		})
	revoke := apiCmd(command("revoke --project PROJECT_ID BATCH_ID", "Disable every code of a batch (takes effect at once)", cobra.ExactArgs(1)),
		"revoke batches", func(ctx context.Context, c *adminclient.Client, args []string) error {
			res, err := adminclient.Call[struct{ Disabled int64 }](ctx, c, http.MethodPost, path(args[0], "revoke"), nil)
			if err != nil {
				return err
			}
			fmt.Printf("batch %s revoked; codes disabled: %d\n", args[0], res.Disabled)
			return nil
		})
	projectFlag(&project, list, show, cancel, revoke)
	return group(&cobra.Command{Use: "batch", Short: "List, show, cancel and revoke code generation batches"},
		list, show, cancel, revoke)
}
