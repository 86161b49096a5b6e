package contract

import (
	"crypto/sha256"
	"encoding/json"
	"time"
)

// AdminAccount is a console account as stored; PasswordHash (argon2id PHC) never leaves the
// console's login and change-password code.
type AdminAccount struct {
	ID                 string
	Username           string
	PasswordHash       string
	Role               string
	MustChangePassword bool
	Disabled           bool
	CreatedAt          time.Time
	PasswordChangedAt  time.Time
}

// NewAdminAccount is what creating an account supplies; the id and times are the store's.
type NewAdminAccount struct {
	Username           string
	PasswordHash       string
	Role               string
	MustChangePassword bool
	Now                time.Time // created_at and password_changed_at
}

// AdminSession is a console session with its account, read in one lookup so every request sees
// the account's role, state and password time afresh.
type AdminSession struct {
	// ID is the SHA-256 of the session token (the token is never stored).
	ID         []byte
	Admin      AdminAccount
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
	RevokedAt  *time.Time
	UserAgent  string
	ClientIP   string
}

// NewAdminSession is what a login records.
type NewAdminSession struct {
	ID        []byte // SHA-256 of the token
	AdminID   string
	Now       time.Time
	ExpiresAt time.Time
	UserAgent string
	ClientIP  string
}

// LoginLimit is one subject an attempt is counted against and how its count locks it.
type LoginLimit struct {
	Subject string
	LockFor func(failures int) time.Duration // lock after failures in the window, 0 for none
}

// LoginReservation is an attempt the login throttle counted, handed back unchanged to refund
// it. Set is the lock it set on each subject (nil for none), Prev the lock it replaced.
type LoginReservation struct {
	Subjects  []string
	Set, Prev []*time.Time
}

// AdminToken is an admin API token as stored: only its secret's hash. Admin is the owner's
// account, read with it so a disabled owner or a lower role applies at once.
type AdminToken struct {
	ID         string
	Hash       []byte
	Name       string
	Role       string
	Admin      AdminAccount
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// NewAdminToken is what creating a token records.
type NewAdminToken struct {
	Hash      []byte // SHA-256 of the secret
	Name      string
	AdminID   string
	Role      string
	Now       time.Time
	ExpiresAt time.Time
}

// APIToken is an admin API token as the admin API shows it: never its secret.
type APIToken struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Role       string `json:"role"`
	OwnerID    string `json:"owner_id"`
	Owner      string `json:"owner"`
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at"`
	LastUsedAt *int64 `json:"last_used_at"`
	RevokedAt  *int64 `json:"revoked_at"`
}

// NewAPIToken is a token just made, with its secret, shown this once.
type NewAPIToken struct {
	APIToken
	Secret string `json:"secret"`
}

// AuditEntry is one console action for the admin audit log. Detail must hold no secret and no
// token: every console role reads the log.
type AuditEntry struct {
	At            time.Time
	AdminID       string // "" when no account is known (a failed login of an unknown name)
	AdminUsername string
	Action        string // e.g. "project.disable", "codes.export", "login.failed"
	TargetKind    string // e.g. "project", "api_key", "code", "admin"; "" when none
	TargetID      string
	ProjectID     string // "" when the action concerns no project
	Detail        map[string]any
	ClientIP      string
}

// AuditRecord is one row of the admin audit log. Detail is the canonical JSON of the entry's
// detail (sorted keys, no spaces), the form its hash covers.
type AuditRecord struct {
	Seq           int64           `json:"seq"`
	At            time.Time       `json:"-"`
	AdminID       string          `json:"admin_id"`
	AdminUsername string          `json:"admin_username"`
	Action        string          `json:"action"`
	TargetKind    string          `json:"target_kind"`
	TargetID      string          `json:"target_id"`
	ProjectID     string          `json:"project_id"`
	Detail        json.RawMessage `json:"detail"`
	ClientIP      string          `json:"client_ip"`
	PrevHash      []byte          `json:"-"`
	Hash          []byte          `json:"-"`
}

// AuditFilter selects rows of the admin audit log; zero fields do not filter.
type AuditFilter struct {
	AdminUsername string
	Action        string // exact, or a prefix ending in '.' ("project." matches every project action)
	TargetKind    string
	TargetID      string
	ProjectID     string
	Since, Until  time.Time // at >= Since, at < Until
	// BeforeSeq pages: only rows older than it (seq < BeforeSeq); 0 starts at the newest.
	BeforeSeq int64
	Limit     int // 1..1000; default 100
}

// AuditAnchor is where the chain starts: the prev_hash its oldest row carries and the seq of
// the last row retention removed (0 and 32 zero bytes before any run).
type AuditAnchor struct {
	Seq  int64
	Hash []byte
}

// auditFormat starts the canonical bytes of every row, naming their format.
const auditFormat = "acv-admin-audit-v1\n"

// CanonicalBytes is the row as its hash covers it: a prefix and a JSON array of every column
// but the hashes, in a fixed order (the time in microseconds, as PostgreSQL keeps it exactly).
func (r AuditRecord) CanonicalBytes() []byte {
	detail := r.Detail
	if len(detail) == 0 {
		detail = json.RawMessage(`{}`)
	}
	fields := []any{r.Seq, r.At.UnixMicro(), r.AdminID, r.AdminUsername, r.Action, r.TargetKind, r.TargetID,
		r.ProjectID, detail, r.ClientIP}
	b, err := json.Marshal(fields)
	if err != nil {
		// Only a Detail that is not JSON fails; hash something that cannot match instead.
		return []byte(auditFormat + "invalid detail: " + err.Error())
	}
	return append([]byte(auditFormat), b...)
}

// ComputeHash is SHA-256 over the row's PrevHash and its CanonicalBytes: what its Hash must be.
func (r AuditRecord) ComputeHash() []byte {
	h := sha256.New()
	h.Write(r.PrevHash)
	h.Write(r.CanonicalBytes())
	return h.Sum(nil)
}

// NewAPIKey is a key to record, its Secret already sealed by the caller: the store never sees
// it in clear. RatePerSec <= 0 or Burst <= 0 leaves that limit unset.
type NewAPIKey struct {
	ID, ProjectID string
	Secret        string
	RatePerSec    float64
	Burst         int
}

// KeyInfo is an API key as an operator lists it: never its secret.
type KeyInfo struct {
	ID         string  `json:"key_id"`
	ProjectID  string  `json:"project_id"`
	Revoked    bool    `json:"revoked"`
	RevokedAt  *int64  `json:"revoked_at"`
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      int     `json:"burst"`
	CreatedAt  int64   `json:"created_at"`
	LastUsedAt *int64  `json:"last_used_at"` // as flushed every few seconds; nil when never
}

// StoredSecret is one API key's secret as the table holds it: sealed, or in clear for a key
// issued before secrets were sealed. The store does not tell them apart.
type StoredSecret struct {
	KeyID  string
	Secret string
}

// RewrapResult counts what re-sealing every API key's secret did. Failed secrets do not open
// (master key missing, or not authentic) and are left alone; RewrapKeys then returns an error.
type RewrapResult struct {
	Sealed    int `json:"sealed"`    // were in clear, now sealed
	Rewrapped int `json:"rewrapped"` // sealed by an older master key, now by the active one
	Current   int `json:"current"`   // already sealed by the active master key
	Failed    int `json:"failed"`
}
