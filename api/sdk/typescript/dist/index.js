// @acv/client: a client of the acv activation-code verification API.
export { Client, } from "./client.js";
export { AcvError, ApiError, AuthenticationError, BadRequestError, ConflictError, ConnectionError, NotFoundError, PayloadTooLargeError, PermissionDeniedError, RateLimitError, ServerError, TimeoutError, } from "./errors.js";
export { EMPTY_BODY_SHA256, buildQuery, encodeComponent, stringToSign, } from "./signing.js";
//# sourceMappingURL=index.js.map