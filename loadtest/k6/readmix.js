// readmix.js: the read endpoints in a weighted mix, at a target rate.
//
// Each iteration picks one request by weight and checks its status and the shape the contract
// promises:
//   project      GET /projects/{id}: the key's project; statistics are integers and
//                total = used + unused + disabled + expired
//   list_unused  GET /codes?status=unused&page&page_size: every item unused (status false, not
//   list_used    disabled, not expired) / used (status true); paging fields consistent:
//                page and page_size echoed, total_pages = ceil(total / page_size), at most
//                page_size items, no verification_logs in list items
//   list_page    GET /codes?page&page_size without filter, a page anywhere in the project
//   search       GET /codes?search=...: a substring of a known code (in random case); total >= 1
//                and every item contains it, case-insensitively
//   by_id        GET /codes/{id}: that code, with a verification_logs array
//   by_code      GET /codes/by-code/{value}: the value percent-encoded; that code, with its logs
//
//   RATE=50 DURATION=30s VUS=20 MAX_VUS=100 CODES_FILE=/abs/codes.csv (any states)
//   MIX=project:1,list_unused:2,list_used:2,list_page:1,search:2,by_id:2,by_code:3
//   MAX_DROPPED_RATE=0.01
//   P95_MS=300 P99_MS=800 MAX_FAILED_RATE=0 MIN_CHECKS_RATE=1
// Per-endpoint latencies appear in the summary as http_req_duration{endpoint:...}.

import { check } from 'k6';
import { Counter } from 'k6/metrics';
import * as sign from './lib/sign.js';
import { loadCodes } from './lib/codes.js';
import { envFloat, envInt, envStr, limitedLogger, seconds, standardThresholds } from './lib/config.js';

const RATE = envInt('RATE', 50);
const DURATION = envStr('DURATION', '30s');
const VUS = envInt('VUS', 20);
const MAX_VUS = envInt('MAX_VUS', Math.max(VUS, 5 * VUS));
const MAX_DROPPED = Math.floor(envFloat('MAX_DROPPED_RATE', 0.01) * RATE * seconds(DURATION));
const DEFAULT_MIX = 'project:1,list_unused:2,list_used:2,list_page:1,search:2,by_id:2,by_code:3';
const PAGE_SIZES = [10, 20, 50, 100];

const codes = loadCodes('readmix-codes');
const unexpected = new Counter('unexpected_failures');
const warn = limitedLogger(3);

function parseMix(s) {
  const out = [];
  let total = 0;
  for (const part of s.split(',')) {
    const [name, w] = part.split(':');
    const weight = Number(w);
    if (!ENDPOINTS[name] || !(weight >= 0)) {
      throw new Error(`MIX: bad entry ${part}; endpoints: ${Object.keys(ENDPOINTS).join(', ')}`);
    }
    total += weight;
    out.push({ name, upTo: total });
  }
  if (total <= 0) {
    throw new Error('MIX: the weights add up to zero');
  }
  return { entries: out, total };
}

const pick = (a) => a[Math.floor(Math.random() * a.length)];
const randomCode = () => codes[Math.floor(Math.random() * codes.length)];
const isInt = (v) => Number.isInteger(v);
const isNullOrInt = (v) => v === null || Number.isInteger(v);

function codeShape(c) {
  return c !== null && typeof c === 'object' && typeof c.id === 'string' && typeof c.code === 'string' &&
    typeof c.status === 'boolean' && typeof c.is_disabled === 'boolean' && typeof c.is_expired === 'boolean' &&
    isNullOrInt(c.expires_at) && isNullOrInt(c.verified_at) && isInt(c.created_at) &&
    (c.verified_by === null || typeof c.verified_by === 'string');
}

function pageChecks(res, b, page, size, itemOK) {
  return {
    'status 200': (r) => r.status === 200,
    'page shape': () => b !== null && Array.isArray(b.items) && isInt(b.total) && isInt(b.total_pages),
    'paging consistent': () => b !== null && b.page === page && b.page_size === size &&
      b.total_pages === Math.ceil(b.total / size) && b.items.length <= size,
    'items match the filter': () => b !== null && Array.isArray(b.items) &&
      b.items.every((c) => codeShape(c) && c.verification_logs === undefined && itemOK(c)),
  };
}

function list(endpoint, status, page, size, itemOK) {
  const res = sign.listCodes({ status, page, page_size: size }, { tags: { endpoint } });
  const b = sign.json(res);
  return [res, pageChecks(res, b, page, size, itemOK)];
}

// A page within the first few when the filter's size is unknown, so most pages hold items.
const smallPage = () => 1 + Math.floor(Math.random() * 3);

const ENDPOINTS = {
  project() {
    const res = sign.getProject({ tags: { endpoint: 'project' } });
    const p = sign.json(res);
    const s = p && p.statistics;
    return [res, {
      'status 200': (r) => r.status === 200,
      'project is the key\'s': () => p !== null && p.id === sign.config.projectID && typeof p.name === 'string' &&
        typeof p.status === 'boolean' && isNullOrInt(p.expires_at) && isInt(p.created_at),
      'statistics add up': () => s != null &&
        ['total_codes', 'used_codes', 'unused_codes', 'disabled_codes', 'expired_codes'].every((k) => isInt(s[k]) && s[k] >= 0) &&
        s.total_codes === s.used_codes + s.unused_codes + s.disabled_codes + s.expired_codes,
    }];
  },
  list_unused() {
    return list('list_unused', 'unused', smallPage(), pick(PAGE_SIZES),
      (c) => c.status === false && !c.is_disabled && !c.is_expired);
  },
  list_used() {
    return list('list_used', 'used', smallPage(), pick(PAGE_SIZES), (c) => c.status === true && !c.is_disabled && !c.is_expired);
  },
  list_page() {
    const size = pick(PAGE_SIZES);
    const page = 1 + Math.floor(Math.random() * Math.max(1, Math.ceil(codes.length / size)));
    return list('list_page', undefined, page, size, () => true);
  },
  search() {
    const value = randomCode().code;
    const len = Math.min(value.length, 3 + Math.floor(Math.random() * 4));
    const at = Math.floor(Math.random() * (value.length - len + 1));
    let term = value.substr(at, len);
    term = Math.random() < 0.5 ? term.toLowerCase() : term;
    const size = pick(PAGE_SIZES);
    const res = sign.listCodes({ search: term, page: 1, page_size: size }, { tags: { endpoint: 'search' } });
    const b = sign.json(res);
    const checks = pageChecks(res, b, 1, size, (c) => c.code.toLowerCase().indexOf(term.toLowerCase()) >= 0);
    checks['search finds the code'] = () => b !== null && b.total >= 1;
    return [res, checks];
  },
  by_id() {
    const row = randomCode();
    const res = sign.getCodeByID(row.id, { tags: { endpoint: 'by_id' } });
    const c = sign.json(res);
    return [res, {
      'status 200': (r) => r.status === 200,
      'the code, with its logs': () => codeShape(c) && c.id === row.id && c.code === row.code &&
        Array.isArray(c.verification_logs),
    }];
  },
  by_code() {
    const row = randomCode();
    const res = sign.getCodeByValue(row.code, { tags: { endpoint: 'by_code' } });
    const c = sign.json(res);
    return [res, {
      'status 200': (r) => r.status === 200,
      'the code, with its logs': () => codeShape(c) && c.id === row.id && c.code === row.code &&
        Array.isArray(c.verification_logs),
    }];
  },
};

const MIX = parseMix(envStr('MIX', DEFAULT_MIX));

function thresholds() {
  const t = Object.assign(
    standardThresholds({ p95: 300, p99: 800, failedRate: 0, checksRate: 1 }),
    { unexpected_failures: ['count==0'], dropped_iterations: [`count<=${MAX_DROPPED}`] },
  );
  const p95 = envFloat('P95_MS', 300);
  for (const e of MIX.entries) {
    t[`http_req_duration{endpoint:${e.name}}`] = [`p(95)<${p95}`];
  }
  return t;
}

export const options = {
  scenarios: {
    readmix: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: VUS,
      maxVUs: MAX_VUS,
      tags: { phase: 'load' },
    },
  },
  thresholds: thresholds(),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

export function setup() {
  if (codes.length === 0) {
    throw new Error('readmix needs codes in CODES_FILE (any state)');
  }
  console.log(`readmix: ${RATE} reads/s for ${DURATION}, mix ${envStr('MIX', DEFAULT_MIX)}, ${codes.length} known codes`);
}

export default function () {
  const x = Math.random() * MIX.total;
  const e = MIX.entries.find((m) => x < m.upTo) || MIX.entries[MIX.entries.length - 1];
  const [res, checks] = ENDPOINTS[e.name]();
  const named = {};
  for (const k of Object.keys(checks)) {
    named[`${e.name}: ${k}`] = checks[k];
  }
  if (!check(res, named, { endpoint: e.name })) {
    unexpected.add(1, { endpoint: e.name });
    warn(`${e.name} ${res.request.method} ${res.url}: HTTP ${res.status} ${String(res.body || res.error).slice(0, 300)}`);
  }
}
