// Shared by the suites: the live service's addresses (set by api/sdk/typescript_test.go), its
// fixtures endpoint, and a scripted local HTTP server for the unit tests.
import { createHash, createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

import { Client, type ClientOptions } from "@acv/client";

export const BASE_URL = process.env["ACV_BASE_URL"] ?? "";
export const PROXY_URL = process.env["ACV_PROXY_URL"] ?? "";
export const FIXTURES_URL = process.env["ACV_FIXTURES_URL"] ?? "";

/** Why the live suites skip, or false when the live service is there. */
export const skipLive: string | false =
  BASE_URL !== "" && PROXY_URL !== "" && FIXTURES_URL !== ""
    ? false
    : "ACV_BASE_URL, ACV_PROXY_URL and ACV_FIXTURES_URL are not set (go test -run TestTypeScriptSDK ./api/sdk/ sets them)";

/** POSTs body to the fixtures endpoint; the decoded answer, or undefined on 204. */
export async function fixture<T = unknown>(path: string, body: unknown = {}): Promise<T> {
  const res = await fetch(FIXTURES_URL + path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`fixture ${path}: HTTP ${res.status}: ${text}`);
  }
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

export interface Tenant {
  project_id: string;
  key_id: string;
  secret: string;
}

/** A new project with an API key, holding codes. */
export async function newTenant(
  codes: string[] = [],
  opts: { expiresAt?: number | null; codeExpiresAt?: number | null } = {},
): Promise<Tenant> {
  const t = await fixture<Tenant>("/tenant", { expires_at: opts.expiresAt ?? null });
  if (codes.length > 0) {
    await fixture("/codes", { project_id: t.project_id, values: codes, expires_at: opts.codeExpiresAt ?? null });
  }
  return t;
}

/** A Client of the tenant against the live API (or the proxy in front of it). */
export function clientOf(t: Tenant, extra: Partial<ClientOptions> = {}): Client {
  return new Client({
    baseUrl: BASE_URL,
    apiKey: t.key_id,
    apiSecret: t.secret,
    projectId: t.project_id,
    backoffBaseMs: 50,
    ...extra,
  });
}

/** Retries fn until it stops throwing, for up to ms; its last error otherwise. */
export async function eventually<T>(fn: () => Promise<T>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) {
        throw err;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- an independent implementation of the server's check, for the wire tests ----

/** The contract's QUERY line of a raw query: pairs as sent, sorted by key then value. */
export function canonicalQuery(rawQuery: string): string {
  const pairs = rawQuery
    .split("&")
    .filter((p) => p !== "")
    .map((raw) => {
      const i = raw.indexOf("=");
      return i < 0 ? { k: raw, v: "", raw } : { k: raw.slice(0, i), v: raw.slice(i + 1), raw };
    });
  const cmp = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
  pairs.sort((a, b) => cmp(a.k, b.k) || cmp(a.v, b.v));
  return pairs.map((p) => p.raw).join("&");
}

/** What the server computes for a request as it arrived: X-Signature over the raw target. */
export function serverSignature(
  secret: string,
  method: string,
  rawTarget: string,
  body: Buffer,
  timestamp: string,
  nonce: string | undefined,
): { stringToSign: string; signature: string; path: string; query: string } {
  const q = rawTarget.indexOf("?");
  const path = q < 0 ? rawTarget : rawTarget.slice(0, q);
  const query = q < 0 ? "" : rawTarget.slice(q + 1);
  const lines = [method, path, canonicalQuery(query), createHash("sha256").update(body).digest("hex"), timestamp];
  if (nonce !== undefined) {
    lines.push(nonce);
  }
  const stringToSign = lines.join("\n");
  return { stringToSign, signature: createHmac("sha256", secret).update(stringToSign).digest("hex"), path, query };
}

// ---- a scripted local server ----

export interface Seen {
  method: string;
  /** the request target exactly as it arrived on the wire */
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
  at: number;
}

/** An answer: status, headers and JSON body; "drop" closes the connection; "hang" never answers. */
export type Reply = { status: number; headers?: Record<string, string>; body?: unknown } | "drop" | "hang";

export interface Scripted {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

/** A server that answers the n-th request with script(n, seen). */
export async function scriptedServer(script: (n: number, req: Seen) => Reply): Promise<Scripted> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const s: Seen = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
        at: Date.now(),
      };
      seen.push(s);
      const r = script(seen.length, s);
      if (r === "drop") {
        req.socket.destroy();
        return;
      }
      if (r === "hang") {
        return;
      }
      const body = r.body === undefined ? "" : JSON.stringify(r.body);
      res.writeHead(r.status, { "Content-Type": "application/json", ...r.headers });
      res.end(body);
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) {
          s.destroy();
        }
        server.close(() => r());
      }),
  };
}

/** Credentials for the local servers. */
export const FAKE = {
  apiKey: "0190a1b2c3d4e5f60718293a4b5c6d7e",
  apiSecret: "5f".repeat(32),
  projectId: "0190a1b2c3d4e5f60718293a4b5c6d70",
};

/** A Client of FAKE against a local server, fast backoff. */
export function fakeClient(url: string, extra: Partial<ClientOptions> = {}): Client {
  return new Client({ baseUrl: url, ...FAKE, backoffBaseMs: 10, backoffMaxMs: 40, ...extra });
}

export const VERIFY_OK = {
  success: true,
  code_id: "0190a1b2c3d4e5f60718293a4b5c6d71",
  code: "X",
  verified_at: 1800000000,
  message: "Code verified successfully",
  error_code: null,
};
