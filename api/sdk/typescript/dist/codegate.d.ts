import { Client, type CallOptions } from "./client.js";
import type { CodePage, CodeStatus as AcvCodeStatus, CodeWithLogs, Project as AcvProject, ProjectStatistics, ReactivateResult as AcvReactivateResult, VerificationLog as AcvVerificationLog, VerifyResult as AcvVerifyResult } from "./types.js";
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
export declare class CodeGateClient {
    /** the underlying client, for what the original SDK did not have */
    readonly client: Client;
    constructor(config: CodeGateClientConfig);
    getProject(): Promise<Project>;
    /** As the original: page 1 and page size 20 are sent when not given. */
    listCodes(options?: ListCodesOptions): Promise<CodeListResponse>;
    getCode(codeId: string): Promise<Code>;
    getCodeByCode(code: string): Promise<Code>;
    /** `verifyCode({ code, verifiedBy })` as the original; `verifyCode(code, verifiedBy)` also works. */
    verifyCode(options: VerifyCodeOptions | string, verifiedBy?: string): Promise<VerifyResult>;
    /** `reactivateCode({ code, reactivatedBy, reason })` as the original. */
    reactivateCode(options: ReactivateCodeOptions | string, reactivatedBy?: string, reason?: string): Promise<ReactivateResult>;
    getStatistics(): Promise<Statistics>;
}
export type { CallOptions };
//# sourceMappingURL=codegate.d.ts.map