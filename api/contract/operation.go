package contract

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

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

// Operation is one verify or reactivate as the hot path receives it, validated.
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
// bucket was consulted, also on a refusal.
type OperationResult struct {
	Outcome  Outcome
	Replayed bool // Outcome is the stored result of an earlier request with the Idempotency-Key
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

// Action names the operation a verification log records.
type Action string

// The two operations that change a code's use state.
const (
	ActionVerify     Action = "verify"
	ActionReactivate Action = "reactivate"
)

// ErrorCode is the error_code of a failed verify or reactivate.
type ErrorCode string

// The error codes of the contract, in the order the checks run.
const (
	CodeNotFound      ErrorCode = "CODE_NOT_FOUND"
	ProjectDisabled   ErrorCode = "PROJECT_DISABLED"
	ProjectExpired    ErrorCode = "PROJECT_EXPIRED"
	CodeDisabled      ErrorCode = "CODE_DISABLED"
	CodeAlreadyUsed   ErrorCode = "CODE_ALREADY_USED"
	CodeAlreadyUnused ErrorCode = "CODE_ALREADY_UNUSED"
	CodeExpired       ErrorCode = "CODE_EXPIRED"
)

// Log results.
const (
	ResultSuccess     = "success"
	ResultReactivated = "reactivated"
	ResultFailed      = "failed"
)

// Message is the short English sentence a result body carries for an outcome; an empty code
// is the success of the action.
func Message(a Action, code ErrorCode) string {
	if code == "" && a == ActionReactivate {
		return "Code reactivated successfully"
	}
	if m, ok := messages[code]; ok {
		return m
	}
	return "Unknown outcome"
}

var messages = map[ErrorCode]string{
	"": "Code verified successfully", CodeNotFound: "Code not found", ProjectDisabled: "Project is disabled",
	ProjectExpired: "Project is expired", CodeDisabled: "Code is disabled", CodeAlreadyUsed: "Code has already been used",
	CodeAlreadyUnused: "Code is already unused", CodeExpired: "Code is expired",
}

// Outcome is what the hot path decided for one verify or reactivate. It is the stored result
// an Idempotency-Key replays, so it holds everything the result body needs.
type Outcome struct {
	Action     Action
	Code       string    // the value the caller sent
	CodeID     string    // empty when the code was not found
	Error      ErrorCode // empty on success
	VerifiedAt int64     // unix ms; verify: the code's verified_at (new or existing), 0 = none
	At         int64     // unix ms of the operation (reactivated_at on success)
}

// Success tells whether the operation changed the code.
func (o Outcome) Success() bool { return o.Error == "" }

// at is the body's time in unix seconds: a verify's verified_at, a successful reactivate's
// reactivated_at; ok is false for null.
func (o Outcome) at() (int64, bool) {
	if o.Action == ActionReactivate {
		return o.At / 1000, o.Success()
	}
	return o.VerifiedAt / 1000, o.VerifiedAt > 0
}

// AppendBody appends the outcome's result body (VerifyResponse or ReactivateResponse by its
// Action), byte for byte what encoding/json writes, without reflection: the verify path's
// whole answer.
func (o Outcome) AppendBody(b []byte) []byte {
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, o.Success())
	b = append(b, `,"code_id":`...)
	if o.CodeID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, o.CodeID)
	}
	b = append(b, `,"code":`...)
	b = appendJSONString(b, o.Code)
	if o.Action == ActionReactivate {
		b = append(b, `,"reactivated_at":`...)
	} else {
		b = append(b, `,"verified_at":`...)
	}
	if at, ok := o.at(); ok {
		b = strconv.AppendInt(b, at, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"message":`...)
	b = appendJSONString(b, Message(o.Action, o.Error))
	b = append(b, `,"error_code":`...)
	if o.Error == "" {
		return append(b, `null}`...)
	}
	b = appendJSONString(b, string(o.Error))
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string the way encoding/json does: HTML-sensitive
// characters, control characters and U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			if e := strings.IndexByte("\"\\\n\r\t\b\f", c); e >= 0 {
				b = append(b, '\\', "\"\\nrtbf"[e])
			} else {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// APIKey is an API key with what authentication needs from its project, so one read decides
// whether a request may proceed.
type APIKey struct {
	ID        string
	ProjectID string
	Secret    string // the HMAC key: sealed at rest, opened by the wiring before the HTTP layer

	Revoked bool
	// RatePerSec and Burst configure the key's token bucket; both 0 means unlimited.
	RatePerSec       float64
	Burst            int
	ProjectEnabled   bool
	ProjectExpiresAt *int64 // unix seconds
	// Version increases with every change of the key, so its mirror keeps the newest state.
	Version int64
}

// Limit is the key's token bucket; the zero RateLimit (unlimited) when either part is unset.
func (k APIKey) Limit() RateLimit {
	if k.RatePerSec <= 0 || k.Burst <= 0 {
		return RateLimit{}
	}
	return RateLimit{Rate: k.RatePerSec, Burst: k.Burst}
}
