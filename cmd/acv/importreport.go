package main

import (
	"fmt"
	"io"

	"github.com/acv/acv/internal/plural"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
)

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
