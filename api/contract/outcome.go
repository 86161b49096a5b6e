package contract

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
	switch code {
	case "":
		if a == ActionReactivate {
			return "Code reactivated successfully"
		}
		return "Code verified successfully"
	case CodeNotFound:
		return "Code not found"
	case ProjectDisabled:
		return "Project is disabled"
	case ProjectExpired:
		return "Project is expired"
	case CodeDisabled:
		return "Code is disabled"
	case CodeAlreadyUsed:
		return "Code has already been used"
	case CodeAlreadyUnused:
		return "Code is already unused"
	case CodeExpired:
		return "Code is expired"
	}
	return "Unknown outcome"
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

// VerifyResponse renders the outcome of a verify as its result body.
func (o Outcome) VerifyResponse() VerifyResponse {
	r := VerifyResponse{Success: o.Success(), Code: o.Code, Message: Message(ActionVerify, o.Error)}
	if o.CodeID != "" {
		id := o.CodeID
		r.CodeID = &id
	}
	if o.VerifiedAt > 0 {
		s := o.VerifiedAt / 1000
		r.VerifiedAt = &s
	}
	if o.Error != "" {
		e := string(o.Error)
		r.ErrorCode = &e
	}
	return r
}

// ReactivateResponse renders the outcome of a reactivate as its result body.
func (o Outcome) ReactivateResponse() ReactivateResponse {
	r := ReactivateResponse{Success: o.Success(), Code: o.Code, Message: Message(ActionReactivate, o.Error)}
	if o.CodeID != "" {
		id := o.CodeID
		r.CodeID = &id
	}
	if o.Success() {
		s := o.At / 1000
		r.ReactivatedAt = &s
	}
	if o.Error != "" {
		e := string(o.Error)
		r.ErrorCode = &e
	}
	return r
}
