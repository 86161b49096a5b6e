package contract

// RowError is one problem row of an import: where it is, what it holds and why it is not
// imported.
type RowError struct {
	Line   int    `json:"line"`   // line of the file, from 1
	Value  string `json:"value"`  // the row's code cell ("" when it has none)
	Kind   string `json:"kind"`   // RowInvalid, RowDuplicate or RowExists
	Reason string `json:"reason"` // for people
}

// ImportOptions says how to import.
type ImportOptions struct {
	// DryRun reads and checks every row, the project's existing codes included, and writes
	// nothing: the report says what a real import would do.
	DryRun bool
	// Progress, when not nil, is told the number of rows read after each batch.
	Progress func(done int)
}

// ImportReport is what an import did (or, in a dry run, would do). An import imports the good
// rows: a row that is invalid, repeats an earlier row or names a code the project holds is
// skipped and listed, and every other row's code is created. Read = Inserted + Duplicates +
// Existing + Invalid.
type ImportReport struct {
	DryRun     bool `json:"dry_run"`
	Read       int  `json:"read"`       // data rows (the header not counted)
	Inserted   int  `json:"inserted"`   // new codes created (in a dry run: that would be)
	Duplicates int  `json:"duplicates"` // rows repeating an earlier row's code
	Existing   int  `json:"existing"`   // rows whose code the project already holds
	Invalid    int  `json:"invalid"`    // rows that cannot be imported
	// Errors lists MaxRowErrors problem rows at most, by line; Truncated tells that there were
	// more. (Invalid rows and repeats are found as they are read, codes already present a batch
	// later, so a truncated list holds the first ones found.)
	Errors    []RowError `json:"errors"`
	Truncated bool       `json:"errors_truncated"`
}
