// Errors the client throws. A business refusal of verify/reactivate (HTTP 200, success: false)
// is a result, never one of these.
/** Base class of every error the SDK throws on its own account. */
export class AcvError extends Error {
    /**
     * The Idempotency-Key of the verify/reactivate call that failed, when it was one. Repeat the
     * call with the same key (and the same arguments) to learn its outcome without redeeming twice.
     */
    idempotencyKey;
    constructor(message, options) {
        super(message, options);
        this.name = new.target.name;
    }
}
/**
 * A non-2xx answer of the API. `detail` is the body's `detail` sentence (the response text when
 * the body is not the contract's JSON). Mirrors CodeGate's `CodeGateApiError(status, detail)`.
 */
export class ApiError extends AcvError {
    status;
    detail;
    /** the response headers (X-RateLimit-*, Retry-After, …); empty when built by hand */
    headers;
    constructor(status, detail, message, headers) {
        super(message ?? `acv API error: HTTP ${status}: ${detail}`);
        this.status = status;
        this.detail = detail;
        this.headers = headers ?? new Headers();
    }
}
/** 400: malformed request, bad query value, code value too long. */
export class BadRequestError extends ApiError {
}
/**
 * 401: unknown, revoked or wrong key or signature, timestamp outside the window, replayed
 * request, disabled project (on the read endpoints).
 */
export class AuthenticationError extends ApiError {
}
/** 403: the project id in the path is not the key's project. */
export class PermissionDeniedError extends ApiError {
}
/** 404: unknown code id, unknown code value (by value), unknown project or route. */
export class NotFoundError extends ApiError {
}
/** 409: the Idempotency-Key was already used with a different request body. */
export class ConflictError extends ApiError {
}
/** 413: request body over 64 KiB. */
export class PayloadTooLargeError extends ApiError {
}
/** 429: rate limit exceeded (after the automatic retries, if any). */
export class RateLimitError extends ApiError {
    /** seconds to wait before trying again, from Retry-After; undefined when absent */
    retryAfter;
    constructor(status, detail, message, headers) {
        super(status, detail, message, headers);
        this.retryAfter = parseRetryAfter(this.headers.get("Retry-After"));
    }
}
/** 5xx: an internal fault or an unavailable dependency. The contract guarantees no partial change. */
export class ServerError extends ApiError {
}
/** The request did not get an HTTP answer: connection refused or reset, DNS, TLS… */
export class ConnectionError extends AcvError {
}
/** No answer within `timeoutMs` (on the last attempt). */
export class TimeoutError extends ConnectionError {
}
/** The error class for an HTTP status. */
export function errorForStatus(status, detail, headers) {
    const message = `acv API error: HTTP ${status}: ${detail}`;
    switch (status) {
        case 400:
            return new BadRequestError(status, detail, message, headers);
        case 401:
            return new AuthenticationError(status, detail, message, headers);
        case 403:
            return new PermissionDeniedError(status, detail, message, headers);
        case 404:
            return new NotFoundError(status, detail, message, headers);
        case 409:
            return new ConflictError(status, detail, message, headers);
        case 413:
            return new PayloadTooLargeError(status, detail, message, headers);
        case 429:
            return new RateLimitError(status, detail, message, headers);
    }
    if (status >= 500) {
        return new ServerError(status, detail, message, headers);
    }
    return new ApiError(status, detail, message, headers);
}
/** Retry-After in seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function parseRetryAfter(value, now = Date.now()) {
    if (value === null || value.trim() === "") {
        return undefined;
    }
    const v = value.trim();
    if (/^\d+$/.test(v)) {
        return Number(v);
    }
    const at = Date.parse(v);
    if (Number.isNaN(at)) {
        return undefined;
    }
    return Math.max(0, Math.ceil((at - now) / 1000));
}
//# sourceMappingURL=errors.js.map