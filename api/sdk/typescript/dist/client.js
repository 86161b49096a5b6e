import { hmacKey, newNonce, newUUID, utf8 } from "./crypto.js";
import { ApiError, ConnectionError, NotFoundError, TimeoutError, errorForStatus, parseRetryAfter, } from "./errors.js";
import { bodySha256, buildQuery, encodeComponent, sign } from "./signing.js";
const RETRYABLE_STATUS = new Set([502, 503, 504]);
/**
 * A client of one project's endpoints with one API key. Every request is signed with the
 * contract's HMAC-SHA256 scheme, with a fresh X-Nonce; verify and reactivate carry an
 * Idempotency-Key, so the client retries them safely after a lost answer.
 */
export class Client {
    baseUrl;
    apiKey;
    projectId;
    timeoutMs;
    retries;
    backoffBaseMs;
    backoffMaxMs;
    maxRetryAfterMs;
    nonce;
    #secret;
    #fetch;
    #headers;
    #key;
    #lastTimestamp = "";
    constructor(options) {
        for (const f of ["baseUrl", "apiKey", "apiSecret", "projectId"]) {
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
    async getProject(options = {}) {
        return (await this.request("GET", this.#projectPath(), options)).data;
    }
    /** Code counts, usage rate and the most recent verifications. */
    async getStatistics(options = {}) {
        return (await this.request("GET", this.#projectPath("/statistics"), options))
            .data;
    }
    /** A page of codes, newest first. Unset parameters are left out (server defaults apply). */
    async listCodes(params = {}, options = {}) {
        const query = {
            page: params.page,
            page_size: params.pageSize,
            status: params.status === "" ? undefined : params.status,
            search: params.search === "" ? undefined : params.search,
        };
        return (await this.request("GET", this.#projectPath("/codes"), { ...options, query }))
            .data;
    }
    /** One code by its id, with its verification history. NotFoundError when unknown. */
    async getCode(codeId, options = {}) {
        requireValue("codeId", codeId);
        const path = this.#projectPath("/codes/" + encodeComponent(codeId));
        return (await this.request("GET", path, options)).data;
    }
    /** One code by its value, with its verification history. NotFoundError when unknown. */
    async getCodeByValue(code, options = {}) {
        requireValue("code", code);
        if (code === "." || code === "..") {
            // A URL cannot carry these as a path segment: WHATWG URL parsers resolve "." and ".."
            // (and %2E, %2E%2E) away, so the request would reach another endpoint. Find the code by
            // an exact match among the search results instead, then read it by id.
            return this.#getDotCode(code, options);
        }
        const path = this.#projectPath("/codes/by-code/" + encodeComponent(code));
        return (await this.request("GET", path, options)).data;
    }
    /**
     * Redeems a code. A refusal (already used, expired, disabled, not found…) is a result with
     * `success: false` and `error_code`, not an exception. Lost answers, timeouts, 502/503/504 and
     * 429 are retried with the same Idempotency-Key, so a retry returns the first attempt's
     * outcome (`replayed: true`) instead of redeeming twice.
     */
    async verify(code, options = {}) {
        const body = { code };
        if (options.verifiedBy !== undefined && options.verifiedBy !== null) {
            body["verified_by"] = options.verifiedBy;
        }
        return this.#idempotent("/codes/verify", body, options);
    }
    /** Resets a used code to unused (a refund, a mistaken verification). Refusals are results. */
    async reactivate(code, options = {}) {
        const body = { code };
        if (options.reactivatedBy !== undefined && options.reactivatedBy !== null) {
            body["reactivated_by"] = options.reactivatedBy;
        }
        if (options.reason !== undefined && options.reason !== null) {
            body["reason"] = options.reason;
        }
        return this.#idempotent("/codes/reactivate", body, options);
    }
    /**
     * Sends one signed request and decodes its JSON answer, with the client's retries and
     * timeout. `path` starts with `/api/v1/` and has its segments percent-encoded already;
     * `query` is encoded here. A non-2xx answer throws the ApiError subclass of its status.
     * POST requests are retried only when they carry an Idempotency-Key.
     */
    async request(method, path, options = {}) {
        const query = buildQuery(options.query);
        const url = this.baseUrl + path + (query === "" ? "" : "?" + query);
        checkSentAsSigned(url, path, query);
        const body = options.body === undefined ? undefined : utf8(JSON.stringify(options.body));
        const bodyHash = await bodySha256(body);
        const idem = options.idempotencyKey;
        const retries = method === "POST" && idem === undefined ? 0 : Math.max(0, options.retries ?? this.retries);
        const signal = options.signal;
        for (let attempt = 0;; attempt++) {
            signal?.throwIfAborted();
            const headers = { Accept: "application/json", ...this.#headers };
            if (body !== undefined) {
                headers["Content-Type"] = "application/json";
            }
            if (idem !== undefined) {
                headers["Idempotency-Key"] = idem;
            }
            // Every attempt is signed anew: fresh timestamp and nonce, so a retry is never a replay.
            Object.assign(headers, await this.#authHeaders(method, path, query, bodyHash, signal));
            let answer;
            try {
                answer = await this.#attempt(url, method, headers, body, signal);
            }
            catch (err) {
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
                let data;
                try {
                    data = JSON.parse(answer.text);
                }
                catch {
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
    async #idempotent(suffix, body, options) {
        const idempotencyKey = options.idempotencyKey ?? (await newUUID());
        const res = await this.request("POST", this.#projectPath(suffix), { body, idempotencyKey, signal: options.signal });
        const replayed = (res.headers.get("Idempotent-Replayed") ?? "").toLowerCase() === "true";
        return { ...res.data, replayed, idempotencyKey };
    }
    async #getDotCode(code, options) {
        for (let page = 1;; page++) {
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
    #projectPath(suffix = "") {
        return "/api/v1/projects/" + encodeComponent(this.projectId) + suffix;
    }
    async #authHeaders(method, path, query, bodyHash, signal) {
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
        const h = {
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
    async #attempt(url, method, headers, body, signal) {
        const ctrl = new AbortController();
        let timedOut = false;
        const timer = setTimeout(() => {
            timedOut = true;
            ctrl.abort();
        }, this.timeoutMs);
        const onAbort = () => ctrl.abort(signal?.reason);
        signal?.addEventListener("abort", onAbort, { once: true });
        try {
            const res = await this.#fetch(url, {
                method,
                headers,
                body: body,
                signal: ctrl.signal,
                // A redirect would reach a path that was not signed: report it, never follow it.
                redirect: "manual",
            });
            const text = await res.text();
            return { status: res.status, headers: res.headers, text };
        }
        catch (err) {
            if (signal?.aborted) {
                throw signal.reason ?? err;
            }
            const what = `${method} ${url.replace(this.baseUrl, "")}`;
            if (timedOut) {
                throw new TimeoutError(`${what}: no answer within ${this.timeoutMs} ms`, { cause: err });
            }
            throw new ConnectionError(`${what}: ${errorMessage(err)}`, { cause: err });
        }
        finally {
            clearTimeout(timer);
            signal?.removeEventListener("abort", onAbort);
        }
    }
    /** Exponential backoff with jitter: between half and all of min(max, base·2^attempt). */
    #backoff(attempt) {
        const d = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** attempt);
        return d / 2 + Math.random() * (d / 2);
    }
}
function requireValue(name, v) {
    if (typeof v !== "string" || v === "") {
        throw new TypeError(`${name} must be a non-empty string`);
    }
}
/**
 * Refuses to send a URL whose path or query a WHATWG URL parser would change: what is sent must
 * be what is signed.
 */
function checkSentAsSigned(url, path, query) {
    const u = new URL(url);
    if (!u.pathname.endsWith(path) || u.search !== (query === "" ? "" : "?" + query)) {
        throw new TypeError(`cannot send ${path} as signed: the URL parser rewrites it to ${u.pathname}${u.search}`);
    }
}
function detailOf(text, status) {
    try {
        const v = JSON.parse(text);
        if (typeof v?.detail === "string") {
            return v.detail;
        }
    }
    catch {
        // not the contract's JSON body (a proxy's page, say): the text is the detail
    }
    return text !== "" ? text : `HTTP ${status}`;
}
function errorMessage(err) {
    if (err instanceof Error) {
        const cause = err.cause;
        return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
    }
    return String(err);
}
/** Waits ms milliseconds; rejects with the signal's reason when it aborts. */
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted) {
            reject(signal.reason);
            return;
        }
        const onAbort = () => {
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
//# sourceMappingURL=client.js.map