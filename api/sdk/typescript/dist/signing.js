// The contract's request signature, and the one URL encoding the client uses for what it signs
// and what it sends.
//
// Why one encoding, and why this one. The string to sign holds the path and the query *as sent*.
// The original CodeGate TypeScript SDK built its signed query with encodeURIComponent, which
// leaves ! ' ( ) * unescaped, and handed the same text to fetch. fetch parses every URL with the
// WHATWG URL parser, whose query percent-encode set for http(s) URLs includes the apostrophe: a
// search for "it's" was signed as `search=it's` but went out as `search=it%27s`. A server that
// checks the query as sent refuses that signature, which is why the contract's server also accepts
// the encodeURIComponent form for old clients. This client does not depend on that leniency: it
// encodes every key and value with encodeURIComponent *and* percent-encodes ! ' ( ) *, so the
// query holds only unreserved characters (A-Z a-z 0-9 - . _ ~) and %XX escapes, which the WHATWG
// parser (in Node's fetch, browsers, Deno, Bun and edge runtimes alike) passes through untouched.
// The query string is built once, sorted by key then value, and that very string is both signed
// and appended to the URL: the bytes on the wire are the bytes signed (test/wire.test.ts checks
// it against a server that reads the raw request line).
import { hmacHex, sha256Hex } from "./crypto.js";
/** Lowercase hex SHA-256 of the empty string: the body hash of a request without a body. */
export const EMPTY_BODY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/**
 * Percent-encodes a query key or value, or a path segment: encodeURIComponent, plus ! ' ( ) *,
 * so that the result holds nothing a WHATWG URL parser would re-encode. Space is `%20`.
 */
export function encodeComponent(s) {
    return encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}
/**
 * The query string to send and to sign: each key and value encoded with encodeComponent, the
 * pairs sorted by encoded key then encoded value (the contract's order, so the sent order is the
 * signed order), joined by '&'. Empty when there are no pairs.
 */
export function buildQuery(query) {
    if (query === undefined) {
        return "";
    }
    const pairs = [];
    const entries = Array.isArray(query)
        ? query
        : Object.entries(query);
    for (const [k, v] of entries) {
        if (v === undefined || v === null) {
            continue;
        }
        pairs.push([encodeComponent(k), encodeComponent(String(v))]);
    }
    pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}
/** The contract's string to sign: its lines joined with '\n'. */
export function stringToSign(i) {
    const lines = [i.method.toUpperCase(), i.path, i.query, i.bodySha256, i.timestamp];
    if (i.nonce !== undefined && i.nonce !== "") {
        lines.push(i.nonce);
    }
    return lines.join("\n");
}
/** X-Signature: lowercase hex HMAC-SHA256 of the string to sign, keyed with the API secret. */
export async function sign(key, i) {
    return hmacHex(key, stringToSign(i));
}
/** Lowercase hex SHA-256 of the body bytes (of the empty string when there is no body). */
export async function bodySha256(body) {
    if (body === undefined || body.length === 0) {
        return EMPTY_BODY_SHA256;
    }
    return sha256Hex(body);
}
//# sourceMappingURL=signing.js.map