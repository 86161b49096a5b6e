// The contract's JSON shapes, field names exactly as on the wire. Integer timestamps are Unix
// seconds (UTC).
export {};
//# sourceMappingURL=types.js.map