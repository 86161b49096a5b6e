// Automatic retries against a scripted local server: what is retried, with what, and what not.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  TimeoutError,
} from "@acv/client";

import { VERIFY_OK, fakeClient, scriptedServer, type Reply } from "./helpers.js";

const detail = (d: string) => ({ detail: d });

async function withServer<T>(script: (n: number) => Reply, fn: (url: string, seen: () => number) => Promise<T>) {
  const srv = await scriptedServer((n) => script(n));
  try {
    return { result: await fn(srv.url, () => srv.seen.length), seen: srv.seen };
  } finally {
    await srv.close();
  }
}

describe("retries", () => {
  it("502, 503, 504 then success: one logical verify, same Idempotency-Key and body, fresh signatures", async () => {
    const statuses = [502, 503, 504];
    const { result, seen } = await withServer(
      (n) => (n <= 3 ? { status: statuses[n - 1]!, body: detail("unavailable") } : { status: 200, body: VERIFY_OK, headers: { "Idempotent-Replayed": "true" } }),
      (url) => fakeClient(url).verify("X", { verifiedBy: "v" }),
    );
    assert.equal(seen.length, 4);
    assert.equal(result.success, true);
    assert.equal(result.replayed, true);
    assert.equal(new Set(seen.map((s) => s.headers["idempotency-key"])).size, 1);
    assert.equal(result.idempotencyKey, seen[0]!.headers["idempotency-key"]);
    assert.equal(new Set(seen.map((s) => s.body.toString())).size, 1);
    assert.equal(new Set(seen.map((s) => s.headers["x-nonce"])).size, 4);
    assert.equal(new Set(seen.map((s) => s.headers["x-signature"])).size, 4);
  });

  it("a dropped connection (lost answer) is retried", async () => {
    const { result, seen } = await withServer(
      (n) => (n === 1 ? "drop" : { status: 200, body: VERIFY_OK }),
      (url) => fakeClient(url).verify("X"),
    );
    assert.equal(seen.length, 2);
    assert.equal(result.success, true);
    assert.equal(seen[0]!.headers["idempotency-key"], seen[1]!.headers["idempotency-key"]);
  });

  it("a timeout is retried; the last one throws TimeoutError with the Idempotency-Key", async () => {
    const { result, seen } = await withServer(
      () => "hang",
      async (url) => {
        try {
          await fakeClient(url, { timeoutMs: 150, retries: 2 }).verify("X", { idempotencyKey: "order-42" });
          return undefined;
        } catch (e) {
          return e;
        }
      },
    );
    assert.ok(result instanceof TimeoutError, String(result));
    assert.ok(result instanceof ConnectionError);
    assert.equal(result.idempotencyKey, "order-42");
    assert.equal(seen.length, 3);
    assert.ok(seen.every((s) => s.headers["idempotency-key"] === "order-42"));
  });

  it("GETs are retried too", async () => {
    const { result, seen } = await withServer(
      (n) => (n === 1 ? "drop" : n === 2 ? { status: 503, body: detail("x") } : { status: 200, body: { id: "p" } }),
      (url) => fakeClient(url).getProject(),
    );
    assert.equal(seen.length, 3);
    assert.equal(result.id, "p");
  });

  it("429 waits out Retry-After, then retries", async () => {
    const started = Date.now();
    const { result, seen } = await withServer(
      (n) => (n === 1 ? { status: 429, body: detail("Rate limit exceeded"), headers: { "Retry-After": "1" } } : { status: 200, body: VERIFY_OK }),
      (url) => fakeClient(url).verify("X"),
    );
    assert.equal(result.success, true);
    assert.equal(seen.length, 2);
    assert.ok(seen[1]!.at - seen[0]!.at >= 950, `waited ${seen[1]!.at - seen[0]!.at} ms`);
    assert.ok(Date.now() - started < 5000);
  });

  it("a Retry-After beyond maxRetryAfterMs ends the call with RateLimitError.retryAfter", async () => {
    const { result, seen } = await withServer(
      () => ({ status: 429, body: detail("Rate limit exceeded"), headers: { "Retry-After": "120" } }),
      async (url) => fakeClient(url).getProject().catch((e: unknown) => e),
    );
    assert.equal(seen.length, 1);
    assert.ok(result instanceof RateLimitError);
    assert.equal(result.retryAfter, 120);
    assert.equal(result.status, 429);
    assert.equal(result.detail, "Rate limit exceeded");
  });

  it("never retries other 4xx, nor 500; each status has its error class", async () => {
    const cases: Array<[number, new (...a: never[]) => ApiError]> = [
      [302, ApiError],
      [400, BadRequestError],
      [401, AuthenticationError],
      [403, PermissionDeniedError],
      [404, NotFoundError],
      [409, ConflictError],
      [413, PayloadTooLargeError],
      [418, ApiError],
      [500, ServerError],
    ];
    for (const [status, cls] of cases) {
      const { result, seen } = await withServer(
        () => ({ status, body: detail(`detail ${status}`), headers: status === 302 ? { Location: "/elsewhere" } : ({} as Record<string, string>) }),
        async (url) => fakeClient(url).verify("X", { idempotencyKey: "k" }).catch((e: unknown) => e),
      );
      assert.equal(seen.length, 1, `HTTP ${status} sent ${seen.length} times`);
      assert.ok(result instanceof cls, `HTTP ${status}: ${String(result)}`);
      assert.ok(result instanceof ApiError);
      assert.equal(result.status, status);
      assert.equal(result.detail, `detail ${status}`);
      assert.equal(result.idempotencyKey, "k");
    }
  });

  it("gives up after `retries` retries with the last answer's error", async () => {
    const { result, seen } = await withServer(
      () => ({ status: 503, body: detail("Service unavailable") }),
      async (url) => fakeClient(url, { retries: 2 }).getStatistics().catch((e: unknown) => e),
    );
    assert.equal(seen.length, 3);
    assert.ok(result instanceof ServerError);
    assert.equal(result.status, 503);
  });

  it("retries: 0 sends once; a POST without Idempotency-Key through request() is never retried", async () => {
    for (const run of [
      (url: string) => fakeClient(url, { retries: 0 }).getProject(),
      (url: string) => fakeClient(url).request("POST", "/api/v1/projects/p/codes/verify", { body: { code: "X" } }),
    ]) {
      const { result, seen } = await withServer(() => "drop", async (url) => run(url).catch((e: unknown) => e));
      assert.equal(seen.length, 1);
      assert.ok(result instanceof ConnectionError);
    }
  });

  it("an abort signal ends the call during backoff", async () => {
    const ctrl = new AbortController();
    const { result, seen } = await withServer(
      () => ({ status: 503, body: detail("x") }),
      async (url) => {
        const p = fakeClient(url, { backoffBaseMs: 10_000, backoffMaxMs: 10_000 }).verify("X", { signal: ctrl.signal });
        setTimeout(() => ctrl.abort(new Error("stop")), 200);
        return p.catch((e: unknown) => e);
      },
    );
    assert.equal(seen.length, 1);
    assert.equal((result as Error).message, "stop");
  });

  it("without nonce, a retry waits for the next second so its signature differs", async () => {
    const { result, seen } = await withServer(
      (n) => (n === 1 ? { status: 503, body: detail("x") } : { status: 200, body: VERIFY_OK }),
      (url) => fakeClient(url, { nonce: false }).verify("X"),
    );
    assert.equal(result.success, true);
    assert.notEqual(seen[0]!.headers["x-timestamp"], seen[1]!.headers["x-timestamp"]);
    assert.notEqual(seen[0]!.headers["x-signature"], seen[1]!.headers["x-signature"]);
  });

  it("a business refusal (200, success: false) is a result, not an exception", async () => {
    const refusal = { ...VERIFY_OK, success: false, verified_at: null, message: "Code has already been used", error_code: "CODE_ALREADY_USED" };
    const { result, seen } = await withServer(() => ({ status: 200, body: refusal }), (url) => fakeClient(url).verify("X"));
    assert.equal(seen.length, 1);
    assert.equal(result.success, false);
    assert.equal(result.error_code, "CODE_ALREADY_USED");
  });
});
