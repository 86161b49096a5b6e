/** Counts of a project's codes by derived state; total = used + unused + disabled + expired. */
export interface CodeCounts {
    total_codes: number;
    used_codes: number;
    unused_codes: number;
    disabled_codes: number;
    expired_codes: number;
}
/** GET /api/v1/projects/{project_id} */
export interface Project {
    id: string;
    name: string;
    description: string;
    /** true when the project is enabled */
    status: boolean;
    expires_at: number | null;
    created_at: number;
    statistics: CodeCounts;
}
/** One entry of a code's verification history. */
export interface VerificationLog {
    id: string;
    verified_at: number;
    /** `verified_by` of a verify, `reactivated_by` of a reactivate */
    verified_by: string | null;
    ip_address: string;
    /** `success` (verified), `reactivated` or `failed` */
    result: "success" | "reactivated" | "failed" | (string & {});
    /** extension: `verify` or `reactivate` */
    action?: "verify" | "reactivate" | (string & {});
    /** extension: the error code of a failure, the caller's reason of a reactivation */
    reason?: string | null;
}
/** A code. `verification_logs` is only present in the single-code responses. */
export interface Code {
    id: string;
    code: string;
    /** true when the code is used (verified) */
    status: boolean;
    is_disabled: boolean;
    is_expired: boolean;
    expires_at: number | null;
    verified_at: number | null;
    verified_by: string | null;
    created_at: number;
    verification_logs?: VerificationLog[];
}
/** A code as returned by getCode/getCodeByValue: with its verification history. */
export interface CodeWithLogs extends Code {
    verification_logs: VerificationLog[];
}
/** GET /api/v1/projects/{project_id}/codes */
export interface CodePage {
    items: Code[];
    total: number;
    page: number;
    page_size: number;
    total_pages: number;
}
/** One used code in the statistics' recent verifications. */
export interface RecentVerification {
    code: string;
    verified_at: number;
    verified_by: string | null;
}
/** GET /api/v1/projects/{project_id}/statistics */
export interface ProjectStatistics extends CodeCounts {
    project_id: string;
    /** used ÷ total rounded to 4 decimals, 0 without codes */
    usage_rate: number;
    /** up to 10 codes currently used, newest verified_at first */
    recent_verifications: RecentVerification[];
}
/** The derived states the list filter selects; `all` or an empty string mean no filter. */
export type CodeStatus = "unused" | "used" | "disabled" | "expired" | "all" | "";
/** The business outcomes of verify and reactivate (`success: false`). */
export type ErrorCode = "CODE_NOT_FOUND" | "PROJECT_DISABLED" | "CODE_DISABLED" | "CODE_ALREADY_USED" | "CODE_ALREADY_UNUSED" | "CODE_EXPIRED" | "PROJECT_EXPIRED";
/** What the SDK adds to a verify or reactivate result (not part of the JSON body). */
export interface IdempotentResult {
    /**
     * true when the server answered from its idempotency store (`Idempotent-Replayed: true`):
     * an earlier attempt of this same logical call was processed, and this is its result.
     */
    replayed: boolean;
    /** the Idempotency-Key the call was sent with; reuse it to repeat the call safely later */
    idempotencyKey: string;
}
/** POST /api/v1/projects/{project_id}/codes/verify. `success: false` is a business refusal. */
export interface VerifyResult extends IdempotentResult {
    success: boolean;
    /** null when the code was not found */
    code_id: string | null;
    code: string;
    verified_at: number | null;
    message: string;
    error_code: ErrorCode | (string & {}) | null;
}
/** POST /api/v1/projects/{project_id}/codes/reactivate. `success: false` is a business refusal. */
export interface ReactivateResult extends IdempotentResult {
    success: boolean;
    code_id: string | null;
    code: string;
    reactivated_at: number | null;
    message: string;
    error_code: ErrorCode | (string & {}) | null;
}
//# sourceMappingURL=types.d.ts.map