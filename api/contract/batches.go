package contract

// Batch statuses: a batch is queued when created, running while an instance generates its
// codes, and ends done, failed or cancelled.
const (
	BatchQueued    = "queued"
	BatchRunning   = "running"
	BatchDone      = "done"
	BatchFailed    = "failed"
	BatchCancelled = "cancelled"
)

// BatchSpec is how a batch's codes are drawn, kept with the batch so its page and the audit
// log can say what was asked for.
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
