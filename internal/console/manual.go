package console

import (
	"context"

	"github.com/acv/acv/api/contract"
)

// ManualResult is the outcome of a manual verify or reactivate: the client API's result body,
// and the id of the verification-log event it made (also in the admin audit log).
type ManualResult struct {
	Success    bool   `json:"success"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	ErrorCode  string `json:"error_code,omitempty"`
	VerifiedAt *int64 `json:"verified_at,omitempty"`
	EventID    string `json:"event_id"`
}

// consoleKeyID stands for the API key in a manual operation's replay marker: the console signs
// nothing, and each operation has a replay key of its own, so the marker never refuses one.
const consoleKeyID = "console"

// verifiedByPrefix marks a verification-log event made by hand: verified_by (or reactivated_by)
// is "console:<username>", a prefix the client API refuses (contract.ValidateBy).
const verifiedByPrefix = contract.ConsoleByPrefix

// ManualVerify redeems a code by hand (support and above), through the hot path the client API
// uses: the same checks (disabled, expired, used, project disabled), the same atomic
// transition and the same verification-log event, whose verified_by names the account. The
// reason, required, is recorded in the admin audit log.
func (s *Service) ManualVerify(ctx context.Context, a Actor, projectID, value, reason string) (ManualResult, error) {
	return s.manual(ctx, a, contract.ActionVerify, projectID, value, reason)
}

// ManualReactivate returns a used code to unused by hand (support and above), as the client
// API's reactivate does; the reason goes into the verification log too.
func (s *Service) ManualReactivate(ctx context.Context, a Actor, projectID, value, reason string) (ManualResult, error) {
	return s.manual(ctx, a, contract.ActionReactivate, projectID, value, reason)
}

func (s *Service) manual(ctx context.Context, a Actor, action contract.Action, projectID, value, reason string) (ManualResult, error) {
	if err := a.require(RoleSupport); err != nil {
		return ManualResult{}, err
	}
	if s.hot == nil || s.admin == nil {
		return ManualResult{}, errNoOperatorActions
	}
	if err := contract.ValidateCode(value); err != nil {
		return ManualResult{}, contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if reason == "" {
		return ManualResult{}, contract.Errorf(contract.KindInvalid, "A reason is required")
	}
	if err := contract.ValidateText("reason", reason, contract.MaxReasonLen); err != nil {
		return ManualResult{}, contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if _, err := s.admin.Project(ctx, projectID, s.now().Unix()); err != nil {
		return ManualResult{}, err
	}
	eventID := contract.NewID()
	op := contract.Operation{
		Action:    action,
		ProjectID: projectID,
		KeyID:     consoleKeyID,
		Code:      value,
		By:        verifiedByPrefix + a.Username,
		IP:        a.IP,
		ReplayKey: "console:" + eventID,
		EventID:   eventID,
		Now:       s.now(),
	}
	run := s.hot.Verify
	if action == contract.ActionReactivate {
		op.Reason = reason
		run = s.hot.Reactivate
	}
	r, err := run(ctx, op)
	if err != nil {
		return ManualResult{}, err
	}
	res := ManualResult{Success: r.Outcome.Success(), Code: value, EventID: eventID, ErrorCode: string(r.Outcome.Error)}
	if action == contract.ActionVerify {
		vr := r.Outcome.VerifyResponse()
		res.Message = vr.Message
	} else {
		res.Message = r.Outcome.ReactivateResponse().Message
	}
	if r.Outcome.VerifiedAt != 0 {
		v := r.Outcome.VerifiedAt / 1000
		res.VerifiedAt = &v
	}
	err = s.record(ctx, a, "code.manual_"+string(action), "code", value, projectID, map[string]any{
		"reason": reason, "success": res.Success, "error_code": res.ErrorCode, "event_id": eventID})
	return res, err
}
