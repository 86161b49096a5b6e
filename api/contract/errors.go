package contract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Kind classifies an error by what the caller can do about it; HTTPStatus is its one table.
type Kind string

// The kinds of the contract's refusals.
const (
	KindInvalid      Kind = "invalid"      // the request is malformed: 400
	KindUnauthorized Kind = "unauthorized" // authentication failed: 401
	KindForbidden    Kind = "forbidden"    // authenticated, but not for this project: 403
	KindNotFound     Kind = "not_found"    // 404
	KindConflict     Kind = "conflict"     // 409
	KindTooLarge     Kind = "too_large"    // 413
	KindRateLimited  Kind = "rate_limited" // 429
	KindUnavailable  Kind = "unavailable"  // a dependency is down or slow: 503
	KindInternal     Kind = "internal"     // a fault of ours: 500

	KindMethodNotAllowed     Kind = "method_not_allowed"     // 405
	KindUnsupportedMediaType Kind = "unsupported_media_type" // 415
)

// Kinds lists every kind, for the tests that check each has its status.
var Kinds = []Kind{KindInvalid, KindUnauthorized, KindForbidden, KindNotFound, KindConflict, KindTooLarge,
	KindRateLimited, KindUnavailable, KindInternal, KindMethodNotAllowed, KindUnsupportedMediaType}

// Error is a refusal with a kind and a message safe to show the caller; errors without one in
// their chain are internal, logged and never shown. Err, the cause, is never shown; Wait, when
// set, is the Retry-After.
type Error struct {
	Kind    Kind
	Message string
	Err     error
	Wait    time.Duration
}

// Error is the message, followed by the cause unless the cause is itself a refusal.
func (e *Error) Error() string {
	var ce *Error
	if e.Err != nil && !errors.As(e.Err, &ce) {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Unavailable wraps the error of a dependency that is down or unreachable into a
// KindUnavailable refusal: the caller may retry later.
func Unavailable(cause error) *Error {
	return &Error{Kind: KindUnavailable, Message: "Service temporarily unavailable", Err: cause}
}

// Errorf makes an Error of kind with a formatted message.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// HTTPStatus is the status a refusal of kind k is answered with; an unknown kind is a 500.
func (k Kind) HTTPStatus() int {
	if s, ok := httpStatus[k]; ok {
		return s
	}
	return http.StatusInternalServerError
}

var httpStatus = map[Kind]int{
	KindInvalid: http.StatusBadRequest, KindUnauthorized: http.StatusUnauthorized, KindForbidden: http.StatusForbidden,
	KindNotFound: http.StatusNotFound, KindMethodNotAllowed: http.StatusMethodNotAllowed,
	KindUnsupportedMediaType: http.StatusUnsupportedMediaType, KindConflict: http.StatusConflict,
	KindTooLarge: http.StatusRequestEntityTooLarge, KindRateLimited: http.StatusTooManyRequests,
	KindUnavailable: http.StatusServiceUnavailable,
}

// KindOf is the kind of the first Error in err's chain; KindInternal when there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// NotFound is a refusal naming what does not exist; errors.Is(err, ErrNotFound) holds for it.
func NotFound(format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...), Err: ErrNotFound}
}

// Answer is how an HTTP adapter answers err: status, detail, Retry-After seconds (0: none). A
// refusal shows its own message; anything else is internal (to be logged) and shows nothing.
func Answer(err error) (status int, detail string, retryAfter int, internal bool) {
	var ce *Error
	if errors.As(err, &ce) && ce.Kind != KindInternal && ce.Kind != KindUnavailable {
		wait := 0
		if ce.Wait > 0 {
			wait = max(1, int(math.Ceil(ce.Wait.Seconds())))
		}
		return ce.Kind.HTTPStatus(), ce.Message, wait, false
	}
	if KindOf(err) == KindUnavailable || looksUnavailable(err) {
		// Usually back within moments (a failover): Retry-After spreads the clients' retries.
		return KindUnavailable.HTTPStatus(), "Service temporarily unavailable", 1, true
	}
	return KindInternal.HTTPStatus(), "Internal server error", 0, true
}

// looksUnavailable tells whether err looks like a dependency being down or slow rather than a
// bug: a deadline, a cancellation, a timeout or a temporary failure.
func looksUnavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	var oe interface{ Temporary() bool }
	return errors.As(err, &oe)
}

// ConnectionLost tells whether err is a failure to reach a server or to keep talking to it: a
// refused, reset or closed connection, a stream cut short, any network error. The Redis and
// PostgreSQL adapters answer it with Unavailable.
func ConnectionLost(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// Refusals the stores and the hot path report; callers test them with errors.Is.
var (
	// ErrNotFound: the row or entry asked for does not exist.
	ErrNotFound = &Error{Kind: KindNotFound, Message: "Not found"}
	// ErrConflict: a write would duplicate a unique value.
	ErrConflict = &Error{Kind: KindConflict, Message: "Already exists"}
	// ErrCountChanged: a bulk change's confirmed count is no longer what it would change.
	ErrCountChanged = &Error{Kind: KindConflict, Message: "The count changed"}
	// ErrReplayed: the request's replay identity was seen within the signature window.
	ErrReplayed = &Error{Kind: KindUnauthorized, Message: "Request replayed"}
	// ErrReplayedWithoutNonce is ErrReplayed telling how to repeat a request on purpose.
	ErrReplayedWithoutNonce = &Error{Kind: KindUnauthorized, Err: ErrReplayed,
		Message: "Request replayed: to repeat a request within 300 seconds, send each one with its own X-Nonce"}
	// ErrRateLimited: the key's token bucket is empty; RateState.Wait says for how long.
	ErrRateLimited = &Error{Kind: KindRateLimited, Message: "Rate limit exceeded"}
	// ErrIdempotencyConflict: the Idempotency-Key was first used with another request.
	ErrIdempotencyConflict = &Error{Kind: KindConflict, Message: "Idempotency-Key was already used with a different request"}
)
