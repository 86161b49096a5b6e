/** Base class of every error the SDK throws on its own account. */
export declare class AcvError extends Error {
    /**
     * The Idempotency-Key of the verify/reactivate call that failed, when it was one. Repeat the
     * call with the same key (and the same arguments) to learn its outcome without redeeming twice.
     */
    idempotencyKey?: string;
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
/**
 * A non-2xx answer of the API. `detail` is the body's `detail` sentence (the response text when
 * the body is not the contract's JSON). Mirrors CodeGate's `CodeGateApiError(status, detail)`.
 */
export declare class ApiError extends AcvError {
    readonly status: number;
    readonly detail: string;
    /** the response headers (X-RateLimit-*, Retry-After, …); empty when built by hand */
    readonly headers: Headers;
    constructor(status: number, detail: string, message?: string, headers?: Headers);
}
/** 400: malformed request, bad query value, code value too long. */
export declare class BadRequestError extends ApiError {
}
/**
 * 401: unknown, revoked or wrong key or signature, timestamp outside the window, replayed
 * request, disabled project (on the read endpoints).
 */
export declare class AuthenticationError extends ApiError {
}
/** 403: the project id in the path is not the key's project. */
export declare class PermissionDeniedError extends ApiError {
}
/** 404: unknown code id, unknown code value (by value), unknown project or route. */
export declare class NotFoundError extends ApiError {
}
/** 409: the Idempotency-Key was already used with a different request body. */
export declare class ConflictError extends ApiError {
}
/** 413: request body over 64 KiB. */
export declare class PayloadTooLargeError extends ApiError {
}
/** 429: rate limit exceeded (after the automatic retries, if any). */
export declare class RateLimitError extends ApiError {
    /** seconds to wait before trying again, from Retry-After; undefined when absent */
    readonly retryAfter: number | undefined;
    constructor(status: number, detail: string, message?: string, headers?: Headers);
}
/** 5xx: an internal fault or an unavailable dependency. The contract guarantees no partial change. */
export declare class ServerError extends ApiError {
}
/** The request did not get an HTTP answer: connection refused or reset, DNS, TLS… */
export declare class ConnectionError extends AcvError {
}
/** No answer within `timeoutMs` (on the last attempt). */
export declare class TimeoutError extends ConnectionError {
}
/** The error class for an HTTP status. */
export declare function errorForStatus(status: number, detail: string, headers: Headers): ApiError;
/** Retry-After in seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export declare function parseRetryAfter(value: string | null, now?: number): number | undefined;
//# sourceMappingURL=errors.d.ts.map