// Package contract is the domain of the activation-code verification service: the wire
// contract (resources, outcomes and error codes, state derivation, ids, request signing),
// every type the services and adapters exchange, and the error kinds with their one HTTP
// table. It imports nothing of the project (api/layers_test.go checks it).
package contract

import "math"

// Project is the project resource of the contract. Timestamps are Unix seconds.
type Project struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Status      bool        `json:"status"` // true when the project is enabled
	ExpiresAt   *int64      `json:"expires_at"`
	CreatedAt   int64       `json:"created_at"`
	Statistics  *Statistics `json:"statistics,omitempty"`
}

// Statistics counts a project's codes by derived state; the four states are disjoint, so
// TotalCodes = UsedCodes + UnusedCodes + DisabledCodes + ExpiredCodes.
type Statistics struct {
	TotalCodes    int64 `json:"total_codes"`
	UsedCodes     int64 `json:"used_codes"`
	UnusedCodes   int64 `json:"unused_codes"`
	DisabledCodes int64 `json:"disabled_codes"`
	ExpiredCodes  int64 `json:"expired_codes"`
}

// Code is the code resource. VerificationLogs is only set by the single-code endpoints.
type Code struct {
	ID               string     `json:"id"`
	Code             string     `json:"code"`
	Status           bool       `json:"status"` // true when used (verified)
	IsDisabled       bool       `json:"is_disabled"`
	IsExpired        bool       `json:"is_expired"`
	ExpiresAt        *int64     `json:"expires_at"`
	VerifiedAt       *int64     `json:"verified_at"`
	VerifiedBy       *string    `json:"verified_by"`
	CreatedAt        int64      `json:"created_at"`
	VerificationLogs []LogEntry `json:"verification_logs,omitempty"`
}

// LogEntry is one verification log as the API shows it. Action and Reason are extensions.
type LogEntry struct {
	ID         string  `json:"id"`
	VerifiedAt int64   `json:"verified_at"`
	VerifiedBy *string `json:"verified_by"`
	IPAddress  string  `json:"ip_address"`
	Result     string  `json:"result"`
	Action     string  `json:"action"`
	Reason     *string `json:"reason"`
}

// CodePage is the list response.
type CodePage struct {
	Items      []Code `json:"items"`
	Total      int64  `json:"total"`
	Page       int    `json:"page"`
	PageSize   int    `json:"page_size"`
	TotalPages int64  `json:"total_pages"`
}

// VerifyRequest is the body of POST .../codes/verify.
type VerifyRequest struct {
	Code       string  `json:"code"`
	VerifiedBy *string `json:"verified_by"`
}

// ReactivateRequest is the body of POST .../codes/reactivate.
type ReactivateRequest struct {
	Code          string  `json:"code"`
	ReactivatedBy *string `json:"reactivated_by"`
	Reason        *string `json:"reason"`
}

// VerifyResponse is the result body of a verify.
type VerifyResponse struct {
	Success    bool    `json:"success"`
	CodeID     *string `json:"code_id"`
	Code       string  `json:"code"`
	VerifiedAt *int64  `json:"verified_at"`
	Message    string  `json:"message"`
	ErrorCode  *string `json:"error_code"`
}

// ReactivateResponse is the result body of a reactivate.
type ReactivateResponse struct {
	Success       bool    `json:"success"`
	CodeID        *string `json:"code_id"`
	Code          string  `json:"code"`
	ReactivatedAt *int64  `json:"reactivated_at"`
	Message       string  `json:"message"`
	ErrorCode     *string `json:"error_code"`
}

// ErrorBody is every non-2xx body.
type ErrorBody struct {
	Detail string `json:"detail"`
}

// ProjectStatistics is the body of GET …/statistics: the derived-state counts, the usage rate
// and up to RecentVerificationsLimit codes currently used, newest verified_at first.
type ProjectStatistics struct {
	ProjectID string `json:"project_id"`
	Statistics
	UsageRate           float64              `json:"usage_rate"`
	RecentVerifications []RecentVerification `json:"recent_verifications"`
}

// NewProjectStatistics assembles the statistics body (recent is never null).
func NewProjectStatistics(projectID string, st Statistics, recent []RecentVerification) ProjectStatistics {
	if recent == nil {
		recent = []RecentVerification{}
	}
	return ProjectStatistics{ProjectID: projectID, Statistics: st, UsageRate: UsageRate(st), RecentVerifications: recent}
}

// RecentVerification is one code currently used, as the statistics endpoint lists it.
type RecentVerification struct {
	Code       string  `json:"code"`
	VerifiedAt int64   `json:"verified_at"` // Unix seconds
	VerifiedBy *string `json:"verified_by"`
}

// RecentVerificationsLimit is how many used codes the statistics endpoint lists.
const RecentVerificationsLimit = 10

// UsageRate is used ÷ total rounded to 4 decimals, 0 when there are no codes.
func UsageRate(s Statistics) float64 {
	if s.TotalCodes <= 0 {
		return 0
	}
	return math.Round(float64(s.UsedCodes)/float64(s.TotalCodes)*10000) / 10000
}
