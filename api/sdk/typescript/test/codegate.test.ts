// CodeGate compatibility against the live service: the drop-in client with the original SDK's
// names, and requests signed exactly as the original TypeScript SDK signed them (encodeURIComponent,
// five lines, no nonce) but sent by fetch, which writes ' as %27.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { describe, it } from "node:test";

import { CodeGateApiError, CodeGateClient, generateSignature, type CodeGateClientConfig } from "@acv/client/codegate";

import { BASE_URL, newTenant, skipLive, type Tenant } from "./helpers.js";

const config = (t: Tenant): CodeGateClientConfig => ({ apiKey: t.key_id, secret: t.secret, projectId: t.project_id, baseUrl: BASE_URL });

/** The original SDK's signature, written out here from its algorithm, independent of the package. */
function originalSignature(method: string, path: string, query: Record<string, string>, body: string, ts: number, secret: string): string {
  const q = Object.keys(query)
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(query[k]!)}`)
    .join("&");
  const bodyHash = createHash("sha256").update(body).digest("hex");
  return createHmac("sha256", secret).update(`${method}\n${path}\n${q}\n${bodyHash}\n${ts}`).digest("hex");
}

describe("codegate", { skip: skipLive }, () => {
  it("CodeGateClient has the original SDK's methods, and they work", async () => {
    const t = await newTenant(["CG-1", "CG-2", "CG/3 é"]);
    const cg = new CodeGateClient(config(t));
    for (const m of ["getProject", "listCodes", "getCode", "getCodeByCode", "verifyCode", "reactivateCode", "getStatistics"] as const) {
      assert.equal(typeof cg[m], "function", m);
    }
    assert.equal((await cg.getProject()).id, t.project_id);
    const list = await cg.listCodes({ status: "unused", search: "cg" });
    assert.equal(list.total, 3);
    assert.equal(list.page, 1);
    assert.equal(list.page_size, 20);
    const byCode = await cg.getCodeByCode("CG/3 é");
    assert.equal((await cg.getCode(byCode.id)).code, "CG/3 é");

    const v = await cg.verifyCode({ code: "CG-1", verifiedBy: "legacy" });
    assert.equal(v.success, true);
    const v2 = await cg.verifyCode({ code: "CG-1" });
    assert.equal(v2.error_code, "CODE_ALREADY_USED");
    assert.equal((await cg.verifyCode("CG-2", "positional")).success, true);
    const r = await cg.reactivateCode({ code: "CG-1", reactivatedBy: "legacy", reason: "refund" });
    assert.equal(r.success, true);
    const s = await cg.getStatistics();
    assert.equal(s.project_id, t.project_id);
    assert.equal(s.total_codes, 3);

    await assert.rejects(cg.getCodeByCode("absent"), (e: unknown) => e instanceof CodeGateApiError && e.status === 404 && typeof e.detail === "string");
    await assert.rejects(new CodeGateClient({ ...config(t), secret: "f".repeat(64) }).getProject(), (e: unknown) => e instanceof CodeGateApiError && e.status === 401);
    const made = new CodeGateApiError(418, "teapot");
    assert.equal(made.status, 418);
    assert.equal(made.detail, "teapot");
  });

  it("requests signed as the original TypeScript SDK signed them, sent by fetch, are accepted", async () => {
    const codes = ["!'()*", "it's (new)*!", "a b", "one + two = 100% & more!", "ünï 漢"];
    const t = await newTenant(codes);
    const path = `/api/v1/projects/${t.project_id}/codes`;
    for (const search of codes) {
      const query = { page: "1", page_size: "20", search };
      const ts = Math.floor(Date.now() / 1000);
      const sig = originalSignature("GET", path, query, "", ts, t.secret);
      assert.equal(sig, generateSignature("GET", path, query, null, ts, t.secret));
      const signedQuery = Object.keys(query).sort().map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(query[k as keyof typeof query])}`).join("&");
      const url = `${BASE_URL}${path}?${signedQuery}`;
      if (search.includes("'")) {
        assert.notEqual(new URL(url).search, "?" + signedQuery, "fetch sends ' as %27, not what was signed");
      }
      const res = await fetch(url, { headers: { "X-API-Key": t.key_id, "X-Timestamp": String(ts), "X-Signature": sig } });
      const body = (await res.json()) as { items: Array<{ code: string }>; detail?: string };
      assert.equal(res.status, 200, `search ${JSON.stringify(search)}: ${body.detail}`);
      assert.deepEqual(body.items.map((i) => i.code), [search]);
    }

    // A verify as the original sent it: JSON body, five-line signature, no nonce.
    const vpath = `${path}/verify`;
    const body = JSON.stringify({ code: "a b", verified_by: "original" });
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(BASE_URL + vpath, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-API-Key": t.key_id, "X-Timestamp": String(ts), "X-Signature": originalSignature("POST", vpath, {}, body, ts, t.secret) },
      body,
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { success: boolean }).success, true);

    // The by-code path as the original built it: encodeURIComponent of the value.
    const value = "it's (new)*!";
    const bpath = `${path}/by-code/${encodeURIComponent(value)}`;
    const res2 = await fetch(BASE_URL + bpath, {
      headers: { "X-API-Key": t.key_id, "X-Timestamp": String(ts), "X-Signature": originalSignature("GET", bpath, {}, "", ts, t.secret) },
    });
    assert.equal(res2.status, 200);
    assert.equal(((await res2.json()) as { code: string }).code, value);
  });
});
