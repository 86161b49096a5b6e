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

// KeysetQuery is one page of a project's codes read by keyset: the codes after a cursor (the
// sort key of the previous page's last row) instead of after OFFSET rows, so the thousandth
// page costs what the first does and a code created or removed meanwhile shifts no page. The
// admin API and the console page this way; the client API keeps its page numbers.
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
	// Step is how many codes a round inserts (50,000 when 0); progress is told after each
	// round, so a job shown live uses smaller ones.
	Step int
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

// CodeWithHistory is a code with its derived state and its verification history, which it
// always shows, even empty.
type CodeWithHistory struct {
	Code
	State            State      `json:"state"`
	VerificationLogs []LogEntry `json:"verification_logs"`
}
