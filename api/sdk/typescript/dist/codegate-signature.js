// The original CodeGate TypeScript SDK's signing helper, same name, arguments and result, for
// code that signed its own requests with it. It signs the five-line string (no nonce) with the
// query as encodeURIComponent writes it, sorted by key: the form the contract's server still
// accepts from old clients even though fetch sends ' as %27 (see signing.ts). New code should
// let Client sign.
import { createHash, createHmac } from "node:crypto";
/** Lowercase hex SHA-256 of the empty string. */
export const EMPTY_STRING_HASH = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/**
 * X-Signature as the original SDK computed it.
 * @param method upper-case HTTP method
 * @param path the request path, without the query
 * @param queryParams the query parameters (signed sorted by key, encodeURIComponent-encoded)
 * @param body the JSON body text, if any
 * @param timestamp Unix seconds, the X-Timestamp value
 * @param secret the API secret (its hex text is the key)
 */
export function generateSignature(method, path, queryParams, body, timestamp, secret) {
    if (timestamp == null || Number.isNaN(timestamp)) {
        throw new Error("timestamp is required");
    }
    if (secret == null || secret === "") {
        throw new Error("secret is required");
    }
    const query = queryParams && Object.keys(queryParams).length > 0
        ? Object.keys(queryParams)
            .sort()
            .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(queryParams[k])}`)
            .join("&")
        : "";
    const bodyHash = body ? createHash("sha256").update(body, "utf8").digest("hex") : EMPTY_STRING_HASH;
    return createHmac("sha256", secret)
        .update(`${method}\n${path}\n${query}\n${bodyHash}\n${timestamp}`, "utf8")
        .digest("hex");
}
//# sourceMappingURL=codegate-signature.js.map