// The bytes on the wire are the bytes signed: a local server reads the raw request line and
// body, recomputes the signature as the contract's server does, and compares.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { FAKE, VERIFY_OK, fakeClient, scriptedServer, serverSignature, type Scripted } from "./helpers.js";

const SEARCHES = [
  "a b",
  "a+b",
  "50%",
  "%2B",
  "x&y=z",
  "!'()*",
  "it's (new)*!",
  "é漢😀",
  "a/b?c#d",
  "one + two = 100% & more!",
  "[]{}|\\^`\"<>",
];

describe("wire", () => {
  let srv: Scripted;
  before(async () => {
    srv = await scriptedServer((_n, req) =>
      req.method === "POST"
        ? { status: 200, body: VERIFY_OK }
        : req.url.includes("/codes?")
          ? { status: 200, body: { items: [], total: 0, page: 1, page_size: 20, total_pages: 0 } }
          : { status: 200, body: {} },
    );
  });
  after(() => srv.close());

  function checkSigned(i: number): { path: string; query: string } {
    const s = srv.seen[i]!;
    const nonce = s.headers["x-nonce"] as string;
    assert.match(nonce, /^[A-Za-z0-9_-]{16,64}$/);
    const want = serverSignature(FAKE.apiSecret, s.method, s.url, s.body, s.headers["x-timestamp"] as string, nonce);
    assert.equal(s.headers["x-signature"], want.signature, `signature over the wire's bytes, ${s.url}`);
    assert.equal(s.headers["x-api-key"], FAKE.apiKey);
    // Sent in the signed order, so the query line signed is the query sent, byte for byte.
    assert.equal(want.query, want.stringToSign.split("\n")[2]);
    return want;
  }

  it("list: searches holding space, + % & = !'()* and non-ASCII", async () => {
    const c = fakeClient(srv.url);
    for (const search of SEARCHES) {
      const n = srv.seen.length;
      await c.listCodes({ search, status: "unused", page: 1, pageSize: 50 });
      const { query } = checkSigned(n);
      assert.equal(new URLSearchParams(query).get("search"), search);
      assert.match(query, /^(?:[A-Za-z0-9\-._~=&]|%[0-9A-F]{2})*$/);
    }
  });

  it("by-code path segments holding / space ? # % and non-ASCII", async () => {
    const c = fakeClient(srv.url);
    for (const value of SEARCHES) {
      const n = srv.seen.length;
      await c.getCodeByValue(value);
      const { path } = checkSigned(n);
      const prefix = `/api/v1/projects/${FAKE.projectId}/codes/by-code/`;
      assert.ok(path.startsWith(prefix), path);
      assert.equal(decodeURIComponent(path.slice(prefix.length)), value);
    }
  });

  it("verify: the body hashed is the body sent; nonce and Idempotency-Key on every request", async () => {
    const c = fakeClient(srv.url);
    const n = srv.seen.length;
    const r = await c.verify("é 'x'", { verifiedBy: "till 7" });
    checkSigned(n);
    const s = srv.seen[n]!;
    assert.deepEqual(JSON.parse(s.body.toString("utf8")), { code: "é 'x'", verified_by: "till 7" });
    assert.equal(s.headers["content-type"], "application/json");
    assert.match(s.headers["idempotency-key"] as string, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(r.idempotencyKey, s.headers["idempotency-key"]);
    assert.equal(r.replayed, false);
    await c.getProject();
    await c.getProject();
    const nonces = srv.seen.slice(n).map((x) => x.headers["x-nonce"]);
    assert.equal(new Set(nonces).size, 3, "a fresh nonce per request");
  });

  it("nonce: false signs the five-line string", async () => {
    const c = fakeClient(srv.url, { nonce: false });
    const n = srv.seen.length;
    await c.getProject();
    const s = srv.seen[n]!;
    assert.equal(s.headers["x-nonce"], undefined);
    const want = serverSignature(FAKE.apiSecret, s.method, s.url, s.body, s.headers["x-timestamp"] as string, undefined);
    assert.equal(s.headers["x-signature"], want.signature);
  });

  it("the WebCrypto fallback of Node 18 (no global crypto) signs the same", async () => {
    // Run asynchronously: this process's event loop serves the requests of the child.
    const { execFile } = await import("node:child_process");
    const script = `
      Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });
      const { Client } = await import("@acv/client");
      const c = new Client({ baseUrl: ${JSON.stringify(srv.url)}, apiKey: "k", apiSecret: "s", projectId: "p" });
      await c.getProject();
      await c.verify("x");`;
    await new Promise<void>((resolve, reject) =>
      execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: new URL("../../", import.meta.url), timeout: 20_000 }, (err, _out, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(),
      ),
    );
    const s = srv.seen[srv.seen.length - 1]!;
    const want = serverSignature("s", s.method, s.url, s.body, s.headers["x-timestamp"] as string, s.headers["x-nonce"] as string);
    assert.equal(s.headers["x-signature"], want.signature);
  });
});
