import { hmacKey, newNonce, newUUID, utf8 } from "./crypto.js";
import {
  ApiError,
  ConnectionError,
  NotFoundError,
  TimeoutError,
  errorForStatus,
  parseRetryAfter,
} from "./errors.js";
import { bodySha256, buildQuery, encodeComponent, sign, type QueryInput } from "./signing.js";
import type {
  CodePage,
  CodeStatus,
  CodeWithLogs,
  Project,
  ProjectStatistics,
  ReactivateResult,
  VerifyResult,
} from "./types.js";

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

const RETRYABLE_STATUS = new Set([502, 503, 504]);

/**
 * A client of one project's endpoints with one API key. Every request is signed with the
 * contract's HMAC-SHA256 scheme, with a fresh X-Nonce; verify and reactivate carry an
 * Idempotency-Key, so the client retries them safely after a lost answer.
 */
export class Client {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly projectId: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly maxRetryAfterMs: number;
  readonly nonce: boolean;
  readonly #secret: string;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  #key: Promise<CryptoKey> | undefined;
  #lastTimestamp = "";

  constructor(options: ClientOptions) {
    for (const f of ["baseUrl", "apiKey", "apiSecret", "projectId"] as const) {
      if (typeof options?.[f] !== "string" || options[f] === "") {
        throw new TypeError(`Client: ${f} is required`);
      }
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.#secret = options.apiSecret;
    this.projectId = options.projectId;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = Math.max(0, Math.floor(options.retries ?? 3));
    this.backoffBaseMs = options.backoffBaseMs ?? 200;
    this.backoffMaxMs = options.backoffMaxMs ?? 5_000;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
    this.nonce = options.nonce ?? true;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") {
      throw new TypeError("Client: no global fetch (Node 18 or later, or pass options.fetch)");
    }
    this.#fetch = f;
    this.#headers = { ...options.headers };
  }

  /** The project and its code counts. */
  async getProject(options: CallOptions = {}): Promise<Project> {
    return (await this.request<Project>("GET", this.#projectPath(), options)).data;
  }

  /** Code counts, usage rate and the most recent verifications. */
  async getStatistics(options: CallOptions = {}): Promise<ProjectStatistics> {
    return (await this.request<ProjectStatistics>("GET", this.#projectPath("/statistics"), options))
      .data;
  }

  /** A page of codes, newest first. Unset parameters are left out (server defaults apply). */
  async listCodes(params: ListCodesParams = {}, options: CallOptions = {}): Promise<CodePage> {
    const query: Record<string, string | number | undefined> = {
      page: params.page,
      page_size: params.pageSize,
      status: params.status === "" ? undefined : params.status,
      search: params.search === "" ? undefined : params.search,
    };
    return (await this.request<CodePage>("GET", this.#projectPath("/codes"), { ...options, query }))
      .data;
  }

  /** One code by its id, with its verification history. NotFoundError when unknown. */
  async getCode(codeId: string, options: CallOptions = {}): Promise<CodeWithLogs> {
    requireValue("codeId", codeId);
    const path = this.#projectPath("/codes/" + encodeComponent(codeId));
    return (await this.request<CodeWithLogs>("GET", path, options)).data;
  }

  /** One code by its value, with its verification history. NotFoundError when unknown. */
  async getCodeByValue(code: string, options: CallOptions = {}): Promise<CodeWithLogs> {
    requireValue("code", code);
    if (code === "." || code === "..") {
      // A URL cannot carry these as a path segment: WHATWG URL parsers resolve "." and ".."
      // (and %2E, %2E%2E) away, so the request would reach another endpoint. Find the code by
      // an exact match among the search results instead, then read it by id.
      return this.#getDotCode(code, options);
    }
    const path = this.#projectPath("/codes/by-code/" + encodeComponent(code));
    return (await this.request<CodeWithLogs>("GET", path, options)).data;
  }

  /**
   * Redeems a code. A refusal (already used, expired, disabled, not found…) is a result with
   * `success: false` and `error_code`, not an exception. Lost answers, timeouts, 502/503/504 and
   * 429 are retried with the same Idempotency-Key, so a retry returns the first attempt's
   * outcome (`replayed: true`) instead of redeeming twice.
   */
  async verify(code: string, options: VerifyOptions = {}): Promise<VerifyResult> {
    const body: Record<string, string> = { code };
    if (options.verifiedBy !== undefined && options.verifiedBy !== null) {
      body["verified_by"] = options.verifiedBy;
    }
    return this.#idempotent<VerifyResult>("/codes/verify", body, options);
  }

  /** Resets a used code to unused (a refund, a mistaken verification). Refusals are results. */
  async reactivate(code: string, options: ReactivateOptions = {}): Promise<ReactivateResult> {
    const body: Record<string, string> = { code };
    if (options.reactivatedBy !== undefined && options.reactivatedBy !== null) {
      body["reactivated_by"] = options.reactivatedBy;
    }
    if (options.reason !== undefined && options.reason !== null) {
      body["reason"] = options.reason;
    }
    return this.#idempotent<ReactivateResult>("/codes/reactivate", body, options);
  }

  /**
   * Sends one signed request and decodes its JSON answer, with the client's retries and
   * timeout. `path` starts with `/api/v1/` and has its segments percent-encoded already;
   * `query` is encoded here. A non-2xx answer throws the ApiError subclass of its status.
   * POST requests are retried only when they carry an Idempotency-Key.
   */
  async request<T>(
    method: "GET" | "POST",
    path: string,
    options: RequestOptions = {},
  ): Promise<RawResponse<T>> {
    const query = buildQuery(options.query);
    const url = this.baseUrl + path + (query === "" ? "" : "?" + query);
    checkSentAsSigned(url, path, query);
    const body = options.body === undefined ? undefined : utf8(JSON.stringify(options.body));
    const bodyHash = await bodySha256(body);
    const idem = options.idempotencyKey;
    const retries =
      method === "POST" && idem === undefined ? 0 : Math.max(0, options.retries ?? this.retries);
    const signal = options.signal;

    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      const headers: Record<string, string> = { Accept: "application/json", ...this.#headers };
      if (body !== undefined) {
        headers["Content-Type"] = "application/json";
      }
      if (idem !== undefined) {
        headers["Idempotency-Key"] = idem;
      }
      // Every attempt is signed anew: fresh timestamp and nonce, so a retry is never a replay.
      Object.assign(headers, await this.#authHeaders(method, path, query, bodyHash, signal));

      let answer: { status: number; headers: Headers; text: string };
      try {
        answer = await this.#attempt(url, method, headers, body, signal);
      } catch (err) {
        if (!(err instanceof ConnectionError)) {
          throw err; // the caller aborted
        }
        if (attempt < retries) {
          await sleep(this.#backoff(attempt), signal);
          continue;
        }
        if (idem !== undefined) {
          err.idempotencyKey = idem;
        }
        throw err;
      }

      const { status } = answer;
      if (status >= 200 && status < 300) {
        let data: T;
        try {
          data = JSON.parse(answer.text) as T;
        } catch {
          throw new ApiError(status, answer.text, `acv API: HTTP ${status} with a body that is not JSON`, answer.headers);
        }
        return { status, headers: answer.headers, data };
      }
      if (attempt < retries) {
        if (RETRYABLE_STATUS.has(status)) {
          await sleep(this.#backoff(attempt), signal);
          continue;
        }
        if (status === 429) {
          const ra = parseRetryAfter(answer.headers.get("Retry-After"));
          if (ra === undefined) {
            await sleep(this.#backoff(attempt), signal);
            continue;
          }
          if (ra * 1000 <= this.maxRetryAfterMs) {
            await sleep(ra * 1000 + Math.random() * 100, signal);
            continue;
          }
        }
      }
      const err = errorForStatus(status, detailOf(answer.text, status), answer.headers);
      if (idem !== undefined) {
        err.idempotencyKey = idem;
      }
      throw err;
    }
  }

  async #idempotent<T extends { replayed: boolean; idempotencyKey: string }>(
    suffix: string,
    body: Record<string, string>,
    options: IdempotentCallOptions,
  ): Promise<T> {
    const idempotencyKey = options.idempotencyKey ?? (await newUUID());
    const res = await this.request<Omit<T, "replayed" | "idempotencyKey">>(
      "POST",
      this.#projectPath(suffix),
      { body, idempotencyKey, signal: options.signal },
    );
    const replayed = (res.headers.get("Idempotent-Replayed") ?? "").toLowerCase() === "true";
    return { ...res.data, replayed, idempotencyKey } as T;
  }

  async #getDotCode(code: string, options: CallOptions): Promise<CodeWithLogs> {
    for (let page = 1; ; page++) {
      const p = await this.listCodes({ search: code, page, pageSize: 100 }, options);
      const hit = p.items.find((c) => c.code === code);
      if (hit !== undefined) {
        return this.getCode(hit.id, options);
      }
      if (page >= p.total_pages) {
        throw new NotFoundError(404, "Code not found");
      }
    }
  }

  #projectPath(suffix = ""): string {
    return "/api/v1/projects/" + encodeComponent(this.projectId) + suffix;
  }

  async #authHeaders(
    method: string,
    path: string,
    query: string,
    bodyHash: string,
    signal: AbortSignal | undefined,
  ): Promise<Record<string, string>> {
    let ts = String(Math.floor(Date.now() / 1000));
    if (!this.nonce && ts === this.#lastTimestamp) {
      // Without a nonce the signature is the replay identity: wait for the next second so that
      // a retry (or a repeated call) is not taken for a replay of the previous request.
      await sleep(1000 - (Date.now() % 1000) + 5, signal);
      ts = String(Math.floor(Date.now() / 1000));
    }
    this.#lastTimestamp = ts;
    const nonce = this.nonce ? await newNonce() : undefined;
    this.#key ??= hmacKey(this.#secret);
    const signature = await sign(await this.#key, {
      method,
      path,
      query,
      bodySha256: bodyHash,
      timestamp: ts,
      nonce,
    });
    const h: Record<string, string> = {
      "X-API-Key": this.apiKey,
      "X-Timestamp": ts,
      "X-Signature": signature,
    };
    if (nonce !== undefined) {
      h["X-Nonce"] = nonce;
    }
    return h;
  }

  /** One HTTP exchange, response body included, within timeoutMs. */
  async #attempt(
    url: string,
    method: string,
    headers: Record<string, string>,
    body: Uint8Array | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; headers: Headers; text: string }> {
    const ctrl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort();
    }, this.timeoutMs);
    const onAbort = (): void => ctrl.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const res = await this.#fetch(url, {
        method,
        headers,
        body: body as Uint8Array<ArrayBuffer> | undefined,
        signal: ctrl.signal,
        // A redirect would reach a path that was not signed: report it, never follow it.
        redirect: "manual",
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text };
    } catch (err) {
      if (signal?.aborted) {
        throw signal.reason ?? err;
      }
      const what = `${method} ${url.replace(this.baseUrl, "")}`;
      if (timedOut) {
        throw new TimeoutError(`${what}: no answer within ${this.timeoutMs} ms`, { cause: err });
      }
      throw new ConnectionError(`${what}: ${errorMessage(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Exponential backoff with jitter: between half and all of min(max, base·2^attempt). */
  #backoff(attempt: number): number {
    const d = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** attempt);
    return d / 2 + Math.random() * (d / 2);
  }
}

function requireValue(name: string, v: string): void {
  if (typeof v !== "string" || v === "") {
    throw new TypeError(`${name} must be a non-empty string`);
  }
}

/**
 * Refuses to send a URL whose path or query a WHATWG URL parser would change: what is sent must
 * be what is signed.
 */
function checkSentAsSigned(url: string, path: string, query: string): void {
  const u = new URL(url);
  if (!u.pathname.endsWith(path) || u.search !== (query === "" ? "" : "?" + query)) {
    throw new TypeError(`cannot send ${path} as signed: the URL parser rewrites it to ${u.pathname}${u.search}`);
  }
}

function detailOf(text: string, status: number): string {
  try {
    const v = JSON.parse(text) as { detail?: unknown };
    if (typeof v?.detail === "string") {
      return v.detail;
    }
  } catch {
    // not the contract's JSON body (a proxy's page, say): the text is the detail
  }
  return text !== "" ? text : `HTTP ${status}`;
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}

/** Waits ms milliseconds; rejects with the signal's reason when it aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
