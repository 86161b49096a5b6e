/** Lowercase hex SHA-256 of the empty string. */
export declare const EMPTY_STRING_HASH = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/**
 * X-Signature as the original SDK computed it.
 * @param method upper-case HTTP method
 * @param path the request path, without the query
 * @param queryParams the query parameters (signed sorted by key, encodeURIComponent-encoded)
 * @param body the JSON body text, if any
 * @param timestamp Unix seconds, the X-Timestamp value
 * @param secret the API secret (its hex text is the key)
 */
export declare function generateSignature(method: string, path: string, queryParams: Record<string, string> | null | undefined, body: string | null | undefined, timestamp: number, secret: string): string;
//# sourceMappingURL=codegate-signature.d.ts.map