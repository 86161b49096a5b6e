// The client against the live service: a real API replica with its audit pipeline on Redis and
// PostgreSQL, a proxy that can lose an answer, and a fixtures endpoint (api/sdk/fixtures_test.go).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  type CodePage,
} from "@acv/client";

import { PROXY_URL, clientOf, eventually, fixture, newTenant, skipLive, sleep } from "./helpers.js";

const values = (p: CodePage): string[] => p.items.map((c) => c.code).sort();

describe("live", { skip: skipLive }, () => {
  it("project and statistics", async () => {
    const t = await newTenant(["ST-1", "ST-2", "ST-3"]);
    const c = clientOf(t);
    const p = await c.getProject();
    assert.equal(p.id, t.project_id);
    assert.equal(p.status, true);
    assert.deepEqual(p.statistics, { total_codes: 3, used_codes: 0, unused_codes: 3, disabled_codes: 0, expired_codes: 0 });

    const s0 = await c.getStatistics();
    assert.equal(s0.project_id, t.project_id);
    assert.equal(s0.usage_rate, 0);
    assert.deepEqual(s0.recent_verifications, []);

    assert.equal((await c.verify("ST-2", { verifiedBy: "stats" })).success, true);
    const s = await eventually(async () => {
      const s = await c.getStatistics();
      assert.equal(s.used_codes, 1);
      assert.equal(s.recent_verifications.length, 1);
      return s;
    });
    assert.equal(s.total_codes, 3);
    assert.equal(s.unused_codes, 2);
    assert.equal(s.usage_rate, 0.3333);
    assert.equal(s.recent_verifications[0]!.code, "ST-2");
    assert.equal(s.recent_verifications[0]!.verified_by, "stats");
  });

  it("list: filters, pagination and searches holding space + % & = !'()* and non-ASCII", async () => {
    const codes = ["sp ace", "pl+us", "pct%50", "amp&and", "eq=ual", "bang!'()*", "ünï-漢字-😀", "under_score", "plain-1", "plain-2"];
    const t = await newTenant(codes);
    const c = clientOf(t);
    const searches: Array<[string, string[]]> = [
      [" ", ["sp ace"]],
      ["+", ["pl+us"]],
      ["%", ["pct%50"]],
      ["%50", ["pct%50"]],
      ["&", ["amp&and"]],
      ["=", ["eq=ual"]],
      ["!'()*", ["bang!'()*"]],
      ["'", ["bang!'()*"]],
      ["(", ["bang!'()*"]],
      ["漢字", ["ünï-漢字-😀"]],
      ["😀", ["ünï-漢字-😀"]],
      ["_", ["under_score"]],
      ["PLAIN", ["plain-1", "plain-2"]],
      ["&status=used", []],
      ["nothing", []],
    ];
    for (const [search, want] of searches) {
      const page = await c.listCodes({ search });
      assert.deepEqual(values(page), want, `search ${JSON.stringify(search)}`);
      assert.equal(page.total, want.length);
      assert.ok(page.items.every((i) => i.verification_logs === undefined));
    }

    const all = await c.listCodes();
    assert.equal(all.total, codes.length);
    assert.equal(all.page, 1);
    assert.equal(all.page_size, 20);
    assert.equal((await c.listCodes({ status: "all" })).total, codes.length);
    assert.equal((await c.listCodes({ status: "" })).total, codes.length);
    const p2 = await c.listCodes({ page: 2, pageSize: 3 });
    assert.equal(p2.items.length, 3);
    assert.equal(p2.total_pages, 4);
    assert.equal((await c.listCodes({ page: 9, pageSize: 3 })).items.length, 0);

    // Newest first: created_at, then id, descending.
    const ids = all.items.map((i) => i.id);
    assert.deepEqual(ids, [...ids].sort().reverse());

    assert.equal((await c.verify("plain-1")).success, true);
    await fixture("/code", { project_id: t.project_id, value: "under_score", disabled: true });
    await eventually(async () => {
      assert.deepEqual(values(await c.listCodes({ status: "used" })), ["plain-1"]);
      assert.deepEqual(values(await c.listCodes({ status: "disabled" })), ["under_score"]);
    });
    assert.equal((await c.listCodes({ status: "unused" })).total, codes.length - 2);
    assert.deepEqual(values(await c.listCodes({ status: "used", search: "plain" })), ["plain-1"]);
    assert.deepEqual(values(await c.listCodes({ status: "unused", search: "plain" })), ["plain-2"]);

    for (const bad of [{ status: "bogus" as "used" }, { pageSize: 101 }, { page: 0 }]) {
      await assert.rejects(c.listCodes(bad), (e: unknown) => e instanceof BadRequestError && e.status === 400 && e.detail !== "");
    }
  });

  it("list: repeated query keys are signed and sent together", async () => {
    const t = await newTenant(["rep a", "rep b", "other"]);
    const c = clientOf(t);
    const path = `/api/v1/projects/${t.project_id}/codes`;
    // Sent sorted by key then value: search=rep%20a&search=zz; the server reads the first.
    const r = await c.request<CodePage>("GET", path, { query: [["search", "zz"], ["page", "1"], ["search", "rep a"]] });
    assert.deepEqual(values(r.data), ["rep a"]);
    const r2 = await c.request<CodePage>("GET", path, { query: [["status", "used"], ["status", "unused"], ["search", "rep"]] });
    assert.deepEqual(values(r2.data), ["rep a", "rep b"]);
  });

  it("get by id and by value, with / space ? # % . .. and non-ASCII", async () => {
    const codes = ["a/b", "with space", "ünï/漢 字", "q?x#y", "100%", "%2F", "plus+sign", "tick'(x)*!", ".", "..", "a.b"];
    const t = await newTenant(codes);
    const c = clientOf(t);
    for (const v of codes) {
      const byValue = await c.getCodeByValue(v);
      assert.equal(byValue.code, v);
      assert.deepEqual(byValue.verification_logs, []);
      assert.equal(byValue.status, false);
      const byId = await c.getCode(byValue.id);
      assert.equal(byId.code, v);
      assert.equal(byId.id, byValue.id);
    }
    await assert.rejects(c.getCodeByValue("absent"), (e: unknown) => e instanceof NotFoundError && e.status === 404);
    await assert.rejects(c.getCodeByValue("../a.b"), NotFoundError);
    await assert.rejects(c.getCode("0".repeat(32)), NotFoundError);
  });

  it("verify, CODE_ALREADY_USED, reactivate, CODE_ALREADY_UNUSED, with the verification logs", async () => {
    const t = await newTenant(["FLOW-1"]);
    const c = clientOf(t);
    const v = await c.verify("FLOW-1", { verifiedBy: "cashier-1" });
    assert.equal(v.success, true);
    assert.equal(v.message, "Code verified successfully");
    assert.equal(v.error_code, null);
    assert.equal(v.code, "FLOW-1");
    assert.match(v.code_id ?? "", /^[0-9a-f]{32}$/);
    assert.ok(Math.abs((v.verified_at ?? 0) - Date.now() / 1000) < 60);
    assert.equal(v.replayed, false);
    assert.match(v.idempotencyKey, /^[0-9a-f-]{36}$/);

    const again = await c.verify("FLOW-1", { verifiedBy: "cashier-2" });
    assert.equal(again.success, false);
    assert.equal(again.error_code, "CODE_ALREADY_USED");
    assert.equal(again.message, "Code has already been used");
    assert.equal(again.code_id, v.code_id);

    const got = await c.getCode(v.code_id!);
    assert.equal(got.status, true);
    assert.equal(got.verified_by, "cashier-1");
    assert.equal(got.verified_at, v.verified_at);

    const r = await c.reactivate("FLOW-1", { reactivatedBy: "support", reason: "refund #7" });
    assert.equal(r.success, true);
    assert.equal(r.message, "Code reactivated successfully");
    assert.ok(r.reactivated_at !== null);
    const r2 = await c.reactivate("FLOW-1");
    assert.equal(r2.success, false);
    assert.equal(r2.error_code, "CODE_ALREADY_UNUSED");
    assert.equal(r2.message, "Code is already unused");
    const after = await c.getCodeByValue("FLOW-1");
    assert.equal(after.status, false);
    assert.equal(after.verified_at, null);
    assert.equal(after.verified_by, null);

    const logs = await eventually(async () => {
      const l = (await c.getCode(v.code_id!)).verification_logs;
      assert.equal(l.length, 4);
      return l;
    });
    const count = (result: string) => logs.filter((l) => l.result === result).length;
    assert.equal(count("success"), 1);
    assert.equal(count("reactivated"), 1);
    assert.equal(count("failed"), 2);
    const reactivated = logs.find((l) => l.result === "reactivated")!;
    assert.equal(reactivated.verified_by, "support");
    assert.equal(reactivated.reason, "refund #7");
  });

  it("CODE_NOT_FOUND is a result with code_id null", async () => {
    const c = clientOf(await newTenant(["NF-1"]));
    for (const r of [await c.verify("NF-2"), await c.reactivate("NF-2")]) {
      assert.equal(r.success, false);
      assert.equal(r.error_code, "CODE_NOT_FOUND");
      assert.equal(r.message, "Code not found");
      assert.equal(r.code_id, null);
    }
  });

  it("disabled code, disabled project, expired project", async () => {
    const t = await newTenant(["DIS-1", "DIS-2"]);
    const c = clientOf(t);
    await fixture("/code", { project_id: t.project_id, value: "DIS-1", disabled: true });
    const v = await c.verify("DIS-1");
    assert.equal(v.error_code, "CODE_DISABLED");
    assert.equal(v.message, "Code is disabled");
    assert.equal((await c.reactivate("DIS-1")).error_code, "CODE_DISABLED");
    assert.equal((await c.getCodeByValue("DIS-1")).is_disabled, true);

    await fixture("/project", { project_id: t.project_id, enabled: false });
    await eventually(async () => {
      const r = await c.verify("DIS-2");
      assert.equal(r.success, false);
      assert.equal(r.error_code, "PROJECT_DISABLED");
      assert.equal(r.message, "Project is disabled");
    });
    await eventually(() => assert.rejects(c.getProject(), (e: unknown) => e instanceof AuthenticationError && e.status === 401));
    await assert.rejects(c.listCodes(), AuthenticationError);
    await fixture("/project", { project_id: t.project_id, enabled: true });
    await eventually(async () => assert.equal((await c.verify("DIS-2")).success, true));

    const expired = await newTenant(["EXP-1"], { expiresAt: 1_700_000_000 });
    const e = clientOf(expired);
    const r = await e.verify("EXP-1");
    assert.equal(r.success, false);
    assert.equal(r.error_code, "CODE_EXPIRED");
    assert.equal(r.message, "Code is expired");
    const p = await e.getProject(); // an expired project stays readable
    assert.equal(p.expires_at, 1_700_000_000);
    assert.equal(p.statistics.expired_codes, 1);
    assert.deepEqual(values(await e.listCodes({ status: "expired" })), ["EXP-1"]);
  });

  it("wrong secret, revoked key, another project's path", async () => {
    const t = await newTenant(["AUTH-1"]);
    const wrong = clientOf({ ...t, secret: "0".repeat(64) });
    for (const call of [() => wrong.getProject(), () => wrong.verify("AUTH-1"), () => wrong.listCodes({ search: "it's" })]) {
      await assert.rejects(call(), (e: unknown) => e instanceof AuthenticationError && e.status === 401 && e.detail !== "");
    }
    const other = await newTenant();
    await assert.rejects(clientOf({ ...t, project_id: other.project_id }).getProject(), (e: unknown) => e instanceof PermissionDeniedError && e.status === 403);

    const c = clientOf(t);
    assert.equal((await c.getProject()).id, t.project_id);
    await fixture("/revoke", { key_id: t.key_id });
    await eventually(() => assert.rejects(c.getProject(), AuthenticationError));
    assert.equal((await clientOf(t).verify("AUTH-1").catch((e: unknown) => e)) instanceof AuthenticationError, true);
    assert.equal(((await c.getCodeByValue("AUTH-1").catch((e: unknown) => e)) as AuthenticationError).status, 401);
  });

  it("identical requests within a second all authenticate (X-Nonce); without it, the second is a replay", async () => {
    const t = await newTenant(["NONCE-1", "NONCE-2"]);
    const c = clientOf(t);
    const [a, b] = await Promise.all([c.verify("NONCE-1", { verifiedBy: "same" }), c.verify("NONCE-1", { verifiedBy: "same" })]);
    assert.deepEqual([a.success, b.success].sort(), [false, true]);
    assert.equal([a, b].find((r) => !r.success)!.error_code, "CODE_ALREADY_USED");
    const [p, q] = await Promise.all([c.getProject(), c.getProject()]);
    assert.equal(p.id, q.id);

    // The five-line form (nonce: false), as the original SDKs sign: two identical POSTs in the
    // same second carry the same signature, and the server refuses the second as a replay.
    const x = clientOf(t, { nonce: false, retries: 0 });
    const y = clientOf(t, { nonce: false, retries: 0 });
    await Promise.all([x.getProject(), y.getProject()]); // warm up: keys imported, connections open
    await sleep(1000 - (Date.now() % 1000) + 20);
    const settled = await Promise.allSettled([x.verify("NONCE-2"), y.verify("NONCE-2")]);
    const refused = settled.filter((s) => s.status === "rejected");
    assert.equal(refused.length, 1, JSON.stringify(settled));
    const err = (refused[0] as PromiseRejectedResult).reason as AuthenticationError;
    assert.ok(err instanceof AuthenticationError);
    assert.match(err.detail, /replayed/i);
  });

  it("a verify whose answer was lost is retried automatically and redeems once (replayed)", async () => {
    const t = await newTenant(["LOST-1"]);
    const viaProxy = clientOf(t, { baseUrl: PROXY_URL, retries: 3 });
    const direct = clientOf(t);

    await fixture("/lose-next");
    const r = await viaProxy.verify("LOST-1", { verifiedBy: "till-7" });
    assert.equal(r.success, true, JSON.stringify(r));
    assert.equal(r.replayed, true);
    assert.equal(r.error_code, null);

    const code = await direct.getCode(r.code_id!);
    assert.equal(code.status, true);
    assert.equal(code.verified_by, "till-7");
    const logs = await eventually(async () => {
      const l = (await direct.getCode(r.code_id!)).verification_logs;
      assert.equal(l.length, 1);
      return l;
    });
    assert.equal(logs[0]!.result, "success");
    assert.equal(logs[0]!.verified_by, "till-7");
    await sleep(500);
    assert.equal((await direct.getCode(r.code_id!)).verification_logs.length, 1, "the pipeline wrote one log, once");

    // A new logical call is a new key: it runs, and reports the code used.
    const again = await viaProxy.verify("LOST-1");
    assert.equal(again.replayed, false);
    assert.equal(again.error_code, "CODE_ALREADY_USED");

    // A GET whose answer was lost is retried as well.
    await fixture("/lose-next");
    assert.equal((await viaProxy.getProject()).id, t.project_id);
  });

  it("Idempotency-Key: the same body replays the result, another body is a 409", async () => {
    const t = await newTenant(["IDEM-1", "IDEM-2"]);
    const c = clientOf(t);
    const key = `order-${Date.now()}`;
    const first = await c.verify("IDEM-1", { idempotencyKey: key, verifiedBy: "shop" });
    assert.equal(first.success, true);
    assert.equal(first.replayed, false);
    assert.equal(first.idempotencyKey, key);
    const second = await c.verify("IDEM-1", { idempotencyKey: key, verifiedBy: "shop" });
    assert.equal(second.replayed, true);
    assert.equal(second.success, true);
    assert.equal(second.verified_at, first.verified_at);
    for (const call of [() => c.verify("IDEM-2", { idempotencyKey: key, verifiedBy: "shop" }), () => c.verify("IDEM-1", { idempotencyKey: key })]) {
      await assert.rejects(call(), (e: unknown) => e instanceof ConflictError && e.status === 409 && e.idempotencyKey === key);
    }
    assert.equal((await c.getCodeByValue("IDEM-2")).status, false);
  });
});
