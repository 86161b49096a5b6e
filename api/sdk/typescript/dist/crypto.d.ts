/** The runtime's WebCrypto. */
export declare function webCrypto(): Promise<Crypto>;
/** The UTF-8 bytes of s. */
export declare function utf8(s: string): Uint8Array;
/** Lowercase hex of bytes. */
export declare function toHex(bytes: ArrayBuffer | Uint8Array): string;
/** Lowercase hex SHA-256 of bytes. */
export declare function sha256Hex(bytes: Uint8Array): Promise<string>;
/** An HMAC-SHA256 key from the API secret's text (its 64 hex characters are the key bytes). */
export declare function hmacKey(secret: string): Promise<CryptoKey>;
/** Lowercase hex HMAC-SHA256 of the UTF-8 bytes of message. */
export declare function hmacHex(key: CryptoKey, message: string): Promise<string>;
/** 32 random lowercase hex characters: an X-Nonce (the contract allows 16 to 64 of [A-Za-z0-9_-]). */
export declare function newNonce(): Promise<string>;
/** A random (v4) UUID: an Idempotency-Key. */
export declare function newUUID(): Promise<string>;
//# sourceMappingURL=crypto.d.ts.map