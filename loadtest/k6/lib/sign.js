// Signing and HTTP helpers shared by the k6 scenarios.
//
// Every request is signed with the contract's six-line string (docs: /work/shared/contract.md,
// "Authentication"):
//
//   METHOD \n PATH (as sent, still percent-encoded) \n QUERY (pairs as sent, sorted by key)
//   \n BODY_SHA256_HEX \n TIMESTAMP (Unix seconds) \n NONCE
//
// X-Signature is the lowercase hex HMAC-SHA256 of that string keyed with the API secret's
// 64-character hex text. A fresh random X-Nonce goes with every request, so the service
// replay-checks GETs too and no two requests of a run ever share a replay key.
//
// Configuration (environment, `k6 run -e NAME=value` or exported variables):
//   BASE_URL     service address, default http://127.0.0.1:8080 (a path prefix is allowed and is
//                signed as part of the path, since the service signs the path it receives)
//   API_KEY      API key id (32 hex)                       required
//   API_SECRET   API secret (64 hex)                       required
//   PROJECT_ID   the key's project (32 hex)                required
//   HTTP_TIMEOUT per-request timeout, default 10s

import http from 'k6/http';
import crypto from 'k6/crypto';

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

const NONCE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';

function required(name) {
  const v = __ENV[name];
  if (!v) {
    throw new Error(`${name} is not set: pass -e ${name}=... (see loadtest/README.md)`);
  }
  return v;
}

function splitBase(raw) {
  const m = /^(https?:\/\/[^/?#]+)(\/[^?#]*)?$/.exec(raw.replace(/\/+$/, ''));
  if (!m) {
    throw new Error(`BASE_URL ${raw} must look like http://host:port[/prefix]`);
  }
  return { origin: m[1], prefix: m[2] || '' };
}

const base = splitBase(__ENV.BASE_URL || 'http://127.0.0.1:8080');

export const config = {
  baseURL: base.origin + base.prefix,
  apiKey: required('API_KEY'),
  apiSecret: required('API_SECRET'),
  projectID: required('PROJECT_ID'),
  timeout: __ENV.HTTP_TIMEOUT || '10s',
};

// encode percent-encodes a path segment or query component strictly (RFC 3986 unreserved
// characters stay, everything else, including !'()* and '/', is encoded), so what is signed is
// exactly what goes on the wire: Go's URL parser keeps a valid encoding untouched.
export function encode(s) {
  return encodeURIComponent(String(s)).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

// nonce returns 32 random characters of [A-Za-z0-9_-]: 64 symbols, so a byte's low six bits
// pick one without bias.
export function nonce() {
  const bytes = new Uint8Array(crypto.randomBytes(32));
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    out += NONCE_ALPHABET[bytes[i] & 63];
  }
  return out;
}

function splitPair(p) {
  const i = p.indexOf('=');
  return i < 0 ? [p, ''] : [p.slice(0, i), p.slice(i + 1)];
}

function cmp(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// canonicalQuery sorts the raw query's key=value pairs by key (then value, as the service does
// for repeated keys) without touching their encoding.
export function canonicalQuery(rawQuery) {
  if (!rawQuery) {
    return '';
  }
  return rawQuery
    .split('&')
    .filter((p) => p !== '')
    .sort((x, y) => {
      const [kx, vx] = splitPair(x);
      const [ky, vy] = splitPair(y);
      return kx !== ky ? cmp(kx, ky) : cmp(vx, vy);
    })
    .join('&');
}

// buildQuery encodes [key, value] pairs (or an object) in the given order. The request keeps
// that order; only the string to sign is sorted.
export function buildQuery(query) {
  if (!query) {
    return '';
  }
  const pairs = Array.isArray(query) ? query : Object.keys(query).map((k) => [k, query[k]]);
  return pairs
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${encode(k)}=${encode(v)}`)
    .join('&');
}

export function stringToSign(method, rawPath, rawQuery, bodySHA256Hex, timestamp, nonceValue) {
  const lines = [method.toUpperCase(), rawPath, canonicalQuery(rawQuery), bodySHA256Hex, timestamp];
  if (nonceValue) {
    lines.push(nonceValue);
  }
  return lines.join('\n');
}

// signedHeaders returns the authentication headers (and Content-Type when there is a body) of
// one request. rawPath is the path as sent, without the BASE_URL prefix; rawQuery without '?'.
export function signedHeaders(method, rawPath, rawQuery, body) {
  const ts = String(Math.floor(Date.now() / 1000));
  const n = nonce();
  const bodyHash = body ? crypto.sha256(body, 'hex') : EMPTY_SHA256;
  const sts = stringToSign(method, base.prefix + rawPath, rawQuery || '', bodyHash, ts, n);
  const headers = {
    'X-API-Key': config.apiKey,
    'X-Timestamp': ts,
    'X-Nonce': n,
    'X-Signature': crypto.hmac('sha256', config.apiSecret, sts, 'hex'),
  };
  if (body) {
    headers['Content-Type'] = 'application/json';
  }
  return headers;
}

// signedRequest builds a signed request object for http.batch (and for send below).
//   opts.query  [[k, v], ...] or {k: v}; encoded here
//   opts.body   an object (sent as JSON) or a string
//   opts.name   the metric name tag; set it for paths with ids or values in them, so each
//               endpoint is one time series
//   opts.tags   extra metric tags
//   opts.headers extra headers (e.g. Idempotency-Key)
export function signedRequest(method, path, opts = {}) {
  const rawQuery = buildQuery(opts.query);
  let body = opts.body;
  if (body !== undefined && body !== null && typeof body !== 'string') {
    body = JSON.stringify(body);
  }
  const headers = Object.assign(signedHeaders(method, path, rawQuery, body), opts.headers || {});
  const tags = Object.assign({}, opts.tags || {});
  if (opts.name) {
    tags.name = opts.name;
  }
  return {
    method: method.toUpperCase(),
    url: config.baseURL + path + (rawQuery ? '?' + rawQuery : ''),
    body: body || null,
    params: { headers, tags, timeout: config.timeout },
  };
}

export function send(method, path, opts = {}) {
  const r = signedRequest(method, path, opts);
  return http.request(r.method, r.url, r.body, r.params);
}

// Batches are signed at the moment they are built, so build them right before http.batch.
export function batch(requests) {
  return http.batch(requests);
}

export const projectPath = () => `/api/v1/projects/${config.projectID}`;

export function getProject(opts = {}) {
  return send('GET', projectPath(), Object.assign({ name: 'GET /projects/{id}' }, opts));
}

// listCodes takes {page, page_size, status, search} (any subset).
export function listCodes(query, opts = {}) {
  const pairs = [];
  for (const k of ['status', 'search', 'page', 'page_size']) {
    if (query && query[k] !== undefined && query[k] !== null) {
      pairs.push([k, query[k]]);
    }
  }
  return send('GET', `${projectPath()}/codes`, Object.assign({ query: pairs, name: 'GET /codes' }, opts));
}

export function getCodeByID(id, opts = {}) {
  return send('GET', `${projectPath()}/codes/${encode(id)}`, Object.assign({ name: 'GET /codes/{code_id}' }, opts));
}

export function getCodeByValue(value, opts = {}) {
  return send('GET', `${projectPath()}/codes/by-code/${encode(value)}`,
    Object.assign({ name: 'GET /codes/by-code/{code}' }, opts));
}

export function verifyRequest(code, verifiedBy, opts = {}) {
  const body = { code };
  if (verifiedBy) {
    body.verified_by = verifiedBy;
  }
  return signedRequest('POST', `${projectPath()}/codes/verify`, Object.assign({ body, name: 'POST /codes/verify' }, opts));
}

export function reactivateRequest(code, by, reason, opts = {}) {
  const body = { code };
  if (by) {
    body.reactivated_by = by;
  }
  if (reason) {
    body.reason = reason;
  }
  return signedRequest('POST', `${projectPath()}/codes/reactivate`,
    Object.assign({ body, name: 'POST /codes/reactivate' }, opts));
}

export function verify(code, verifiedBy, opts = {}) {
  const r = verifyRequest(code, verifiedBy, opts);
  return http.request(r.method, r.url, r.body, r.params);
}

export function reactivate(code, by, reason, opts = {}) {
  const r = reactivateRequest(code, by, reason, opts);
  return http.request(r.method, r.url, r.body, r.params);
}

// json parses a response body, or returns null when it is not JSON.
export function json(res) {
  try {
    return JSON.parse(res.body);
  } catch (e) {
    return null;
  }
}
