// @acv/client/codegate: a drop-in for the original CodeGate TypeScript SDK (`codegate-sdk`).
//
// Switching is an import change:
//   import { CodeGateClient, CodeGateApiError } from "codegate-sdk";        // before
//   import { CodeGateClient, CodeGateApiError } from "@acv/client/codegate"; // after
// The names below are those of the original SDK: its config fields, methods, option objects,
// error class and signing helper. Underneath is this package's Client, so the compatible client
// also sends the query it signs, a nonce on every request, an Idempotency-Key on every
// verify/reactivate, and retries lost answers, timeouts, 502/503/504 and 429 safely.
//
// Everything here runs wherever Client runs except generateSignature, which is synchronous like
// the original's and so uses node:crypto (import it on Node, Bun or Deno only).
import { Client } from "./client.js";
export { ApiError as CodeGateApiError } from "./errors.js";
export { EMPTY_STRING_HASH, generateSignature } from "./codegate-signature.js";
/** The original SDK's client class, with the same methods and arguments. */
export class CodeGateClient {
    /** the underlying client, for what the original SDK did not have */
    client;
    constructor(config) {
        if (config?.baseUrl === undefined || config.baseUrl === "") {
            throw new TypeError("CodeGateClient: baseUrl is required");
        }
        this.client = new Client({
            baseUrl: config.baseUrl,
            apiKey: config.apiKey,
            apiSecret: config.secret,
            projectId: config.projectId,
            ...(config.timeoutMs !== undefined && { timeoutMs: config.timeoutMs }),
            ...(config.retries !== undefined && { retries: config.retries }),
            ...(config.nonce !== undefined && { nonce: config.nonce }),
            ...(config.fetch !== undefined && { fetch: config.fetch }),
        });
    }
    getProject() {
        return this.client.getProject();
    }
    /** As the original: page 1 and page size 20 are sent when not given. */
    listCodes(options = {}) {
        const { page = 1, pageSize = 20, status, search } = options;
        return this.client.listCodes({
            page,
            pageSize,
            ...(status ? { status } : {}),
            ...(search ? { search } : {}),
        });
    }
    getCode(codeId) {
        return this.client.getCode(codeId);
    }
    getCodeByCode(code) {
        return this.client.getCodeByValue(code);
    }
    /** `verifyCode({ code, verifiedBy })` as the original; `verifyCode(code, verifiedBy)` also works. */
    verifyCode(options, verifiedBy) {
        const o = typeof options === "string" ? { code: options, verifiedBy } : options;
        return this.client.verify(o.code, {
            ...(o.verifiedBy != null && { verifiedBy: o.verifiedBy }),
            ...(typeof options !== "string" && options.idempotencyKey !== undefined && {
                idempotencyKey: options.idempotencyKey,
            }),
        });
    }
    /** `reactivateCode({ code, reactivatedBy, reason })` as the original. */
    reactivateCode(options, reactivatedBy, reason) {
        const o = typeof options === "string" ? { code: options, reactivatedBy, reason } : options;
        return this.client.reactivate(o.code, {
            ...(o.reactivatedBy != null && { reactivatedBy: o.reactivatedBy }),
            ...(o.reason != null && { reason: o.reason }),
            ...(o.idempotencyKey !== undefined && { idempotencyKey: o.idempotencyKey }),
        });
    }
    getStatistics() {
        return this.client.getStatistics();
    }
}
//# sourceMappingURL=codegate.js.map