/** Lowercase hex SHA-256 of the empty string: the body hash of a request without a body. */
export declare const EMPTY_BODY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/**
 * Percent-encodes a query key or value, or a path segment: encodeURIComponent, plus ! ' ( ) *,
 * so that the result holds nothing a WHATWG URL parser would re-encode. Space is `%20`.
 */
export declare function encodeComponent(s: string): string;
/** Query parameters: pairs (a key may repeat) or a record (undefined values are left out). */
export type QueryInput = ReadonlyArray<readonly [string, string | number | boolean]> | Readonly<Record<string, string | number | boolean | undefined | null>>;
/**
 * The query string to send and to sign: each key and value encoded with encodeComponent, the
 * pairs sorted by encoded key then encoded value (the contract's order, so the sent order is the
 * signed order), joined by '&'. Empty when there are no pairs.
 */
export declare function buildQuery(query: QueryInput | undefined): string;
/** The parts of a request that the signature covers. */
export interface SigningInput {
    method: string;
    /** the path exactly as sent, still percent-encoded, without the query */
    path: string;
    /** the query exactly as sent, without '?', its pairs already sorted by key */
    query: string;
    /** lowercase hex SHA-256 of the body bytes */
    bodySha256: string;
    /** the X-Timestamp value (Unix seconds) */
    timestamp: string;
    /** the X-Nonce value, when one is sent (the string then has six lines) */
    nonce?: string | undefined;
}
/** The contract's string to sign: its lines joined with '\n'. */
export declare function stringToSign(i: SigningInput): string;
/** X-Signature: lowercase hex HMAC-SHA256 of the string to sign, keyed with the API secret. */
export declare function sign(key: CryptoKey, i: SigningInput): Promise<string>;
/** Lowercase hex SHA-256 of the body bytes (of the empty string when there is no body). */
export declare function bodySha256(body: Uint8Array | undefined): Promise<string>;
//# sourceMappingURL=signing.d.ts.map