import { type QueryInput } from "./signing.js";
import type { CodePage, CodeStatus, CodeWithLogs, Project, ProjectStatistics, ReactivateResult, VerifyResult } from "./types.js";
/** How a Client reaches the API. */
export interface ClientOptions {
    /** the API's base address, e.g. `https://acv.example.com` (a trailing slash is ignored) */
    baseUrl: string;
    /** the API key id (X-API-Key) */
    apiKey: string;
    /** the API secret: its 64 hex characters, as shown once when the key was created */
    apiSecret: string;
    /** the project the key is bound to */
    projectId: string;
    /** time limit of one attempt (request and response body), in milliseconds; default 10000 */
    timeoutMs?: number;
    /**
     * automatic retries after a network error, a timeout, 502/503/504 or 429; default 3 (so at most
     * 4 attempts); 0 turns them off. Other 4xx and 500 are never retried.
     */
    retries?: number;
    /** first backoff step in milliseconds (doubled each retry, with jitter); default 200 */
    backoffBaseMs?: number;
    /** largest backoff in milliseconds; default 5000 */
    backoffMaxMs?: number;
    /**
     * longest Retry-After (of a 429) the client waits out by itself, in milliseconds; default
     * 30000. A longer one ends the call with a RateLimitError carrying `retryAfter`.
     */
    maxRetryAfterMs?: number;
    /**
     * send X-Nonce (a fresh random value signed as the sixth line) on every request; default true.
     * Without it the server takes two identical requests within one second for a replay (401).
     */
    nonce?: boolean;
    /** the fetch to use; the global fetch by default */
    fetch?: typeof fetch;
    /** headers added to every request (e.g. User-Agent where the runtime allows it) */
    headers?: Record<string, string>;
}
/** Per-call options. */
export interface CallOptions {
    /** aborts the call, its retries and backoff included */
    signal?: AbortSignal;
}
/** Options of verify/reactivate. */
export interface IdempotentCallOptions extends CallOptions {
    /**
     * the Idempotency-Key (1 to 255 printable ASCII). By default a fresh UUID per call, kept across
     * that call's retries. Pass your own (an order id, say) to make repeats of the same business
     * operation across calls or processes return the first outcome instead of running again.
     */
    idempotencyKey?: string;
}
export interface VerifyOptions extends IdempotentCallOptions {
    /** recorded as the verifier (at most 100 characters) */
    verifiedBy?: string;
}
export interface ReactivateOptions extends IdempotentCallOptions {
    /** recorded as who reactivated (at most 100 characters) */
    reactivatedBy?: string;
    /** why, e.g. a refund (at most 500 characters) */
    reason?: string;
}
export interface ListCodesParams {
    /** page number from 1; the server's default is 1 */
    page?: number;
    /** 1 to 100; the server's default is 20 */
    pageSize?: number;
    /** derived state filter: unused, used, disabled, expired; `all` or empty for none */
    status?: CodeStatus;
    /** case-insensitive substring of the code value (`%` and `_` match themselves) */
    search?: string;
}
/** Options of the low-level request(). */
export interface RequestOptions extends CallOptions {
    /** query parameters, encoded and sorted by the client */
    query?: QueryInput;
    /** a value sent as the JSON body */
    body?: unknown;
    /** sent as Idempotency-Key on every attempt */
    idempotencyKey?: string;
    /** overrides the client's retries for this call */
    retries?: number;
}
/** What request() returns. */
export interface RawResponse<T> {
    status: number;
    headers: Headers;
    data: T;
}
/**
 * A client of one project's endpoints with one API key. Every request is signed with the
 * contract's HMAC-SHA256 scheme, with a fresh X-Nonce; verify and reactivate carry an
 * Idempotency-Key, so the client retries them safely after a lost answer.
 */
export declare class Client {
    #private;
    readonly baseUrl: string;
    readonly apiKey: string;
    readonly projectId: string;
    readonly timeoutMs: number;
    readonly retries: number;
    readonly backoffBaseMs: number;
    readonly backoffMaxMs: number;
    readonly maxRetryAfterMs: number;
    readonly nonce: boolean;
    constructor(options: ClientOptions);
    /** The project and its code counts. */
    getProject(options?: CallOptions): Promise<Project>;
    /** Code counts, usage rate and the most recent verifications. */
    getStatistics(options?: CallOptions): Promise<ProjectStatistics>;
    /** A page of codes, newest first. Unset parameters are left out (server defaults apply). */
    listCodes(params?: ListCodesParams, options?: CallOptions): Promise<CodePage>;
    /** One code by its id, with its verification history. NotFoundError when unknown. */
    getCode(codeId: string, options?: CallOptions): Promise<CodeWithLogs>;
    /** One code by its value, with its verification history. NotFoundError when unknown. */
    getCodeByValue(code: string, options?: CallOptions): Promise<CodeWithLogs>;
    /**
     * Redeems a code. A refusal (already used, expired, disabled, not found…) is a result with
     * `success: false` and `error_code`, not an exception. Lost answers, timeouts, 502/503/504 and
     * 429 are retried with the same Idempotency-Key, so a retry returns the first attempt's
     * outcome (`replayed: true`) instead of redeeming twice.
     */
    verify(code: string, options?: VerifyOptions): Promise<VerifyResult>;
    /** Resets a used code to unused (a refund, a mistaken verification). Refusals are results. */
    reactivate(code: string, options?: ReactivateOptions): Promise<ReactivateResult>;
    /**
     * Sends one signed request and decodes its JSON answer, with the client's retries and
     * timeout. `path` starts with `/api/v1/` and has its segments percent-encoded already;
     * `query` is encoded here. A non-2xx answer throws the ApiError subclass of its status.
     * POST requests are retried only when they carry an Idempotency-Key.
     */
    request<T>(method: "GET" | "POST", path: string, options?: RequestOptions): Promise<RawResponse<T>>;
}
//# sourceMappingURL=client.d.ts.map