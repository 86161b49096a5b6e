package contract

import "time"

// RateLimit is a key's token bucket: Rate tokens a second up to Burst. The zero RateLimit is
// unlimited.
type RateLimit struct {
	Rate  float64
	Burst int
}

// RateState is what the token bucket said of one request, for the X-RateLimit-* headers.
type RateState struct {
	Remaining int           // whole tokens left; -1 when the key is unlimited
	Wait      time.Duration // until the next token, when the request was refused for the limit
}

// Operation is one verify or reactivate as the hot path receives it, after authentication and
// validation.
type Operation struct {
	Action         Action
	ProjectID      string
	KeyID          string
	Code           string
	By             string // verified_by or reactivated_by
	Reason         string // reactivation reason
	IP             string
	ReplayKey      string // the request's replay identity
	IdempotencyKey string // "" when none
	RequestHash    string // identifies the request an Idempotency-Key was first used with
	Limit          RateLimit
	EventID        string
	TraceParent    string // W3C trace context carried with the log event, "" when none
	Now            time.Time
}

// OperationResult is the hot path's answer to an Operation. Rate is set whenever the token
// bucket was consulted, also when the operation is refused with ErrReplayed, ErrRateLimited or
// ErrIdempotencyConflict.
type OperationResult struct {
	Outcome Outcome
	// Replayed is true when Outcome is the stored result of an earlier request with the same
	// Idempotency-Key, not a new operation.
	Replayed bool
	Rate     RateState
}

// Admission is a request outside verify and reactivate that needs the replay check, the token
// bucket, or both.
type Admission struct {
	ProjectID   string
	KeyID       string
	ReplayKey   string
	CheckReplay bool
	Limit       RateLimit
	Now         time.Time
}
