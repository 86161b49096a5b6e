// Cryptography through WebCrypto (crypto.subtle, crypto.getRandomValues, crypto.randomUUID), the
// one API that Node, Deno, Bun, browsers and edge runtimes (Cloudflare Workers, Vercel Edge) all
// have, so the client carries no dependency and runs unchanged on each of them. Node 18 keeps the
// WebCrypto global behind a flag but exports the same object from node:crypto, which is the
// fallback; nothing else here needs Node.
let cached;
/** The runtime's WebCrypto. */
export function webCrypto() {
    cached ??= (async () => {
        const g = globalThis.crypto;
        if (g !== undefined && g.subtle !== undefined && typeof g.getRandomValues === "function") {
            return g;
        }
        const specifier = "node:crypto";
        const m = (await import(/* webpackIgnore: true */ /* @vite-ignore */ specifier));
        return m.webcrypto;
    })();
    return cached;
}
const encoder = new TextEncoder();
/** The UTF-8 bytes of s. */
export function utf8(s) {
    return encoder.encode(s);
}
/** Lowercase hex of bytes. */
export function toHex(bytes) {
    const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    let out = "";
    for (const x of b) {
        out += x.toString(16).padStart(2, "0");
    }
    return out;
}
/** Lowercase hex SHA-256 of bytes. */
export async function sha256Hex(bytes) {
    const c = await webCrypto();
    return toHex(await c.subtle.digest("SHA-256", bytes));
}
/** An HMAC-SHA256 key from the API secret's text (its 64 hex characters are the key bytes). */
export async function hmacKey(secret) {
    const c = await webCrypto();
    return c.subtle.importKey("raw", utf8(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}
/** Lowercase hex HMAC-SHA256 of the UTF-8 bytes of message. */
export async function hmacHex(key, message) {
    const c = await webCrypto();
    return toHex(await c.subtle.sign("HMAC", key, utf8(message)));
}
/** 32 random lowercase hex characters: an X-Nonce (the contract allows 16 to 64 of [A-Za-z0-9_-]). */
export async function newNonce() {
    const c = await webCrypto();
    return toHex(c.getRandomValues(new Uint8Array(16)));
}
/** A random (v4) UUID: an Idempotency-Key. */
export async function newUUID() {
    const c = await webCrypto();
    if (typeof c.randomUUID === "function") {
        return c.randomUUID();
    }
    // Browsers outside a secure context have getRandomValues but no randomUUID.
    const b = c.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = toHex(b);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
//# sourceMappingURL=crypto.js.map