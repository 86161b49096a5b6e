// @acv/client: a client of the acv activation-code verification API.
export {
  Client,
  type CallOptions,
  type ClientOptions,
  type IdempotentCallOptions,
  type ListCodesParams,
  type RawResponse,
  type ReactivateOptions,
  type RequestOptions,
  type VerifyOptions,
} from "./client.js";
export {
  AcvError,
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  TimeoutError,
} from "./errors.js";
export {
  EMPTY_BODY_SHA256,
  buildQuery,
  encodeComponent,
  stringToSign,
  type QueryInput,
  type SigningInput,
} from "./signing.js";
export type {
  Code,
  CodeCounts,
  CodePage,
  CodeStatus,
  CodeWithLogs,
  ErrorCode,
  IdempotentResult,
  Project,
  ProjectStatistics,
  ReactivateResult,
  RecentVerification,
  VerificationLog,
  VerifyResult,
} from "./types.js";
