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

import { Client, type CallOptions } from "./client.js";
import type {
  CodePage,
  CodeStatus as AcvCodeStatus,
  CodeWithLogs,
  Project as AcvProject,
  ProjectStatistics,
  ReactivateResult as AcvReactivateResult,
  VerificationLog as AcvVerificationLog,
  VerifyResult as AcvVerifyResult,
} from "./types.js";

export { ApiError as CodeGateApiError } from "./errors.js";
export { EMPTY_STRING_HASH, generateSignature } from "./codegate-signature.js";

/** The original SDK's constructor argument, with this client's extras as optional fields. */
export interface CodeGateClientConfig {
  apiKey: string;
  secret: string;
  projectId: string;
  /** required in practice: the original defaulted to a placeholder host */
  baseUrl?: string;
  /** time limit of one attempt in milliseconds; default 10000 */
  timeoutMs?: number;
  /** automatic safe retries; default 3, 0 turns them off */
  retries?: number;
  /** send X-Nonce on every request; default true */
  nonce?: boolean;
  /** the fetch to use; the global fetch by default */
  fetch?: typeof fetch;
}

export type Project = AcvProject;
export type Code = CodeWithLogs;
export type CodeListResponse = CodePage;
export type VerificationLog = AcvVerificationLog;
export type VerifyResult = AcvVerifyResult;
export type ReactivateResult = AcvReactivateResult;
export type Statistics = ProjectStatistics;
export type CodeStatus = AcvCodeStatus;

export interface ListCodesOptions {
  page?: number;
  pageSize?: number;
  status?: CodeStatus;
  search?: string;
}

export interface VerifyCodeOptions {
  code: string;
  verifiedBy?: string;
  /** extension: defaults to a fresh UUID per call */
  idempotencyKey?: string;
}

export interface ReactivateCodeOptions {
  code: string;
  reactivatedBy?: string;
  reason?: string;
  /** extension: defaults to a fresh UUID per call */
  idempotencyKey?: string;
}

/** The original SDK's client class, with the same methods and arguments. */
export class CodeGateClient {
  /** the underlying client, for what the original SDK did not have */
  readonly client: Client;

  constructor(config: CodeGateClientConfig) {
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

  getProject(): Promise<Project> {
    return this.client.getProject();
  }

  /** As the original: page 1 and page size 20 are sent when not given. */
  listCodes(options: ListCodesOptions = {}): Promise<CodeListResponse> {
    const { page = 1, pageSize = 20, status, search } = options;
    return this.client.listCodes({
      page,
      pageSize,
      ...(status ? { status } : {}),
      ...(search ? { search } : {}),
    });
  }

  getCode(codeId: string): Promise<Code> {
    return this.client.getCode(codeId);
  }

  getCodeByCode(code: string): Promise<Code> {
    return this.client.getCodeByValue(code);
  }

  /** `verifyCode({ code, verifiedBy })` as the original; `verifyCode(code, verifiedBy)` also works. */
  verifyCode(options: VerifyCodeOptions | string, verifiedBy?: string): Promise<VerifyResult> {
    const o = typeof options === "string" ? { code: options, verifiedBy } : options;
    return this.client.verify(o.code, {
      ...(o.verifiedBy != null && { verifiedBy: o.verifiedBy }),
      ...(typeof options !== "string" && options.idempotencyKey !== undefined && {
        idempotencyKey: options.idempotencyKey,
      }),
    });
  }

  /** `reactivateCode({ code, reactivatedBy, reason })` as the original. */
  reactivateCode(
    options: ReactivateCodeOptions | string,
    reactivatedBy?: string,
    reason?: string,
  ): Promise<ReactivateResult> {
    const o: ReactivateCodeOptions =
      typeof options === "string" ? { code: options, reactivatedBy, reason } : options;
    return this.client.reactivate(o.code, {
      ...(o.reactivatedBy != null && { reactivatedBy: o.reactivatedBy }),
      ...(o.reason != null && { reason: o.reason }),
      ...(o.idempotencyKey !== undefined && { idempotencyKey: o.idempotencyKey }),
    });
  }

  getStatistics(): Promise<Statistics> {
    return this.client.getStatistics();
  }
}

export type { CallOptions };
