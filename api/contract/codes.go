package contract

// NewProject is what an administrator supplies to create a project; the id and creation time
// are the store's to assign.
type NewProject struct {
	Name        string
	Description string
	ExpiresAt   *int64 // unix seconds; nil = never expires
}

// NewCode is one code value to create, with its own optional expiry.
type NewCode struct {
	Code      string
	ExpiresAt *int64 // unix seconds; nil = the project's expiry applies
}

// CodeFilter selects codes of a project for a bulk change: every field set narrows it. A bulk
// disable acts on the codes it selects that are not disabled yet.
type CodeFilter struct {
	// BatchID: only the codes that generation batch made.
	BatchID string `json:"batch_id,omitempty"`
	// State: only codes in that derived state (unused, used or expired).
	State State `json:"status,omitempty"`
	// Search: only codes whose value holds it (case-insensitive).
	Search string `json:"search,omitempty"`
}

// KeysetQuery is one page of a project's codes after a cursor instead of OFFSET rows, so a
// deep page costs what the first does and no concurrent change shifts a page (admin API and
// console; the client API keeps its page numbers).
type KeysetQuery struct {
	State  State  // "" = any state
	Search string // case-insensitive substring of the code value; "" = no search
	// After is the cursor: the seq of the last code of the previous page; 0 = from the newest.
	After    int64
	PageSize int // < 1 is treated as DefaultPageSize
}

// KeysetPage is one keyset page: its codes, newest first, and the cursor of the next page
// (0 when this one is the last).
type KeysetPage struct {
	Codes []CodeRecord
	Next  int64
}

// GenerateSpec describes a batch of random codes.
type GenerateSpec struct {
	Count     int
	Length    int    // random characters, without prefix and suffix
	Charset   string // DefaultCharset when empty
	Prefix    string
	Suffix    string
	ExpiresAt *int64 // unix s; nil: the project's expiry applies
	Step      int    // codes a round inserts, progress told after each (50,000 when 0)
}

// CursorPage is one page of codes read by keyset: the codes, the number of codes matching the
// filters in all, and the cursor that reads the next page ("" on the last).
type CursorPage struct {
	Items      []Code `json:"items"`
	Total      int64  `json:"total"`
	PageSize   int    `json:"page_size"`
	NextCursor string `json:"next_cursor"`
}

// CursorQuery is a keyset page request: the list's filters, a page size and the cursor a
// previous page returned ("" for the first page).
type CursorQuery struct {
	State    State
	Search   string
	Cursor   string
	PageSize int
}

// CodeWithHistory is a code with its derived state and its verification history (always shown).
type CodeWithHistory struct {
	Code
	State            State      `json:"state"`
	VerificationLogs []LogEntry `json:"verification_logs"`
}

// RowError is one problem row of an import and why it is not imported.
type RowError struct {
	Line   int    `json:"line"`   // line of the file, from 1
	Value  string `json:"value"`  // the row's code cell ("" when it has none)
	Kind   string `json:"kind"`   // RowInvalid, RowDuplicate or RowExists
	Reason string `json:"reason"` // for people
}

// ImportOptions says how to import.
type ImportOptions struct {
	// DryRun checks every row, against the existing codes too, and writes nothing.
	DryRun bool
	// Progress, when not nil, is told the number of rows read after each batch.
	Progress func(done int)
}

// ImportReport is what an import did (or would do): a row invalid, repeated or naming an
// existing code is skipped and listed, every other is created. Read = Inserted + Duplicates +
// Existing + Invalid.
type ImportReport struct {
	DryRun     bool `json:"dry_run"`
	Read       int  `json:"read"`       // data rows (the header not counted)
	Inserted   int  `json:"inserted"`   // new codes created (in a dry run: that would be)
	Duplicates int  `json:"duplicates"` // rows repeating an earlier row's code
	Existing   int  `json:"existing"`   // rows whose code the project already holds
	Invalid    int  `json:"invalid"`    // rows that cannot be imported
	// Errors lists at most MaxRowErrors problem rows, the first found, by line; Truncated
	// tells there were more.
	Errors    []RowError `json:"errors"`
	Truncated bool       `json:"errors_truncated"`
}

// Batch statuses, in the order a batch goes through them.
const (
	BatchQueued    = "queued"
	BatchRunning   = "running"
	BatchDone      = "done"
	BatchFailed    = "failed"
	BatchCancelled = "cancelled"
)

// BatchSpec is how a batch's codes are drawn, kept to show what was asked for.
type BatchSpec struct {
	Length    int    `json:"length"`
	Charset   string `json:"charset,omitempty"`
	Prefix    string `json:"prefix,omitempty"`
	Suffix    string `json:"suffix,omitempty"`
	ExpiresAt *int64 `json:"expires_at,omitempty"`
}

// Batch is a named generation of codes and the job that makes them. Times are Unix seconds.
type Batch struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"project_id"`
	Name       string    `json:"name"`
	Requested  int       `json:"requested"`
	Done       int       `json:"done"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	Spec       BatchSpec `json:"spec"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  int64     `json:"created_at"`
	StartedAt  *int64    `json:"started_at"`
	FinishedAt *int64    `json:"finished_at"`
	RevokedAt  *int64    `json:"revoked_at"`
	RevokedBy  string    `json:"revoked_by,omitempty"`
	// CancelRequested: an operator asked the running instance to stop.
	CancelRequested bool `json:"cancel_requested"`
}

// NewBatch is a batch to create, queued.
type NewBatch struct {
	ProjectID string
	Name      string
	Requested int
	Spec      BatchSpec
	CreatedBy string
}

// Final tells whether the batch's job has ended.
func (b Batch) Final() bool {
	return b.Status == BatchDone || b.Status == BatchFailed || b.Status == BatchCancelled
}
