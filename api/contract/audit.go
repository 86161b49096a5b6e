package contract

import (
	"crypto/sha256"
	"encoding/json"
	"time"
)

// AuditEntry is what one action of the operator console records in the admin audit log. Detail
// must hold no secret and no token: the log is read by every console role.
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

// AuditAnchor is where the chain starts: the prev_hash its oldest row must carry and the seq of
// the last row a retention run removed (0 and 32 zero bytes before any run).
type AuditAnchor struct {
	Seq  int64
	Hash []byte
}

// auditFormat starts the canonical bytes of every row; a later format would change it, and a
// verifier would know which rows use which.
const auditFormat = "acv-admin-audit-v1\n"

// CanonicalBytes is the row as its hash covers it: a fixed prefix and a JSON array of every
// column but the hashes, in a fixed order (the time as Unix microseconds, which PostgreSQL
// keeps exactly). Any change to any column changes these bytes.
func (r AuditRecord) CanonicalBytes() []byte {
	detail := r.Detail
	if len(detail) == 0 {
		detail = json.RawMessage(`{}`)
	}
	fields := []any{r.Seq, r.At.UnixMicro(), r.AdminID, r.AdminUsername, r.Action, r.TargetKind, r.TargetID,
		r.ProjectID, detail, r.ClientIP}
	b, err := json.Marshal(fields)
	if err != nil {
		// Only a Detail that is not JSON fails here; it is made by canonicalJSON, or read
		// from a jsonb column, so it always is. Hash something that cannot match instead.
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
