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
