// Unit tests of the encoding and the string to sign (no server).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { describe, it } from "node:test";

import { EMPTY_BODY_SHA256, buildQuery, encodeComponent, stringToSign } from "@acv/client";
import { EMPTY_STRING_HASH, generateSignature } from "@acv/client/codegate";

const NASTY = [
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
  "~-._",
  "[]{}|\\^`\"<>",
  "tab\there",
];

describe("encodeComponent", () => {
  it("leaves only unreserved characters and %XX escapes", () => {
    for (const s of NASTY) {
      assert.match(encodeComponent(s), /^(?:[A-Za-z0-9\-._~]|%[0-9A-F]{2})*$/, s);
      assert.equal(decodeURIComponent(encodeComponent(s)), s);
    }
  });

  it("is what the WHATWG URL parser (and so fetch) sends, unchanged, in the query and the path", () => {
    for (const s of NASTY) {
      const q = buildQuery({ search: s, status: "used" });
      const u = new URL(`http://127.0.0.1/api/v1/projects/p/codes/by-code/${encodeComponent(s)}?${q}`);
      assert.equal(u.search, "?" + q, s);
      assert.equal(u.pathname, "/api/v1/projects/p/codes/by-code/" + encodeComponent(s), s);
      assert.equal(new URLSearchParams(u.search).get("search"), s);
    }
  });

  it("differs from encodeURIComponent exactly where the original SDK broke", () => {
    // The original signed encodeURIComponent output, which keeps ' as is, and fetch sent %27.
    const signedByOriginal = `search=${encodeURIComponent("it's")}`;
    assert.equal(signedByOriginal, "search=it's");
    assert.equal(new URL(`http://h/?${signedByOriginal}`).search, "?search=it%27s");
    assert.equal(buildQuery({ search: "it's" }), "search=it%27s");
    assert.equal(encodeComponent("!'()*"), "%21%27%28%29%2A");
  });
});

describe("buildQuery", () => {
  it("sorts by encoded key, then value, and drops undefined", () => {
    assert.equal(
      buildQuery({ status: "used", search: "a b", page: 2, page_size: undefined }),
      "page=2&search=a%20b&status=used",
    );
    assert.equal(
      buildQuery([
        ["search", "zz"],
        ["page", "1"],
        ["search", "a b"],
      ]),
      "page=1&search=a%20b&search=zz",
    );
    assert.equal(buildQuery({}), "");
    assert.equal(buildQuery(undefined), "");
  });
});

describe("stringToSign", () => {
  it("joins the contract's lines, with the nonce as a sixth line", () => {
    const base = {
      method: "get",
      path: "/api/v1/projects/p/codes",
      query: "page=1&search=a%20b",
      bodySha256: EMPTY_BODY_SHA256,
      timestamp: "1800000000",
    };
    assert.equal(
      stringToSign(base),
      `GET\n/api/v1/projects/p/codes\npage=1&search=a%20b\n${EMPTY_BODY_SHA256}\n1800000000`,
    );
    assert.equal(stringToSign({ ...base, nonce: "n".repeat(32) }), stringToSign(base) + "\n" + "n".repeat(32));
    assert.equal(EMPTY_BODY_SHA256, EMPTY_STRING_HASH);
  });
});

describe("generateSignature (CodeGate compatibility)", () => {
  it("signs as the original SDK did: encodeURIComponent, sorted by key, five lines", () => {
    const secret = "ab".repeat(32);
    const got = generateSignature("GET", "/api/v1/projects/p/codes", { status: "used", search: "it's (new)*!" }, null, 1800000000, secret);
    const sts = `GET\n/api/v1/projects/p/codes\nsearch=it's%20(new)*!&status=used\n${EMPTY_BODY_SHA256}\n1800000000`;
    assert.equal(got, createHmac("sha256", secret).update(sts).digest("hex"));
    assert.throws(() => generateSignature("GET", "/", null, null, 1, ""), /secret/);
  });
});
