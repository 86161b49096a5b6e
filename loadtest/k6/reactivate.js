// reactivate.js: verify -> reactivate cycles on a pool of codes, without contention.
//
// VU n owns codes (n-1)*CODES_PER_VU .. n*CODES_PER_VU-1 of CODES_FILE and cycles through them:
// verify (must succeed), reactivate (must succeed). No two VUs ever touch the same code, so any
// refusal is a fault of the service. With probability READBACK a cycle also reads the code by
// value after each step and checks the contract's read-your-writes promise: the single-code
// endpoint shows status=true right after an acknowledged verify and false after a reactivate.
//
// Closed model by default (VUS VUs loop for DURATION); with RATE set, an open model of RATE
// cycles per second on the same VUS VUs (2 requests per cycle, 4 with a read-back).
//
//   VUS=10 CODES_PER_VU=5 DURATION=30s [RATE=...] READBACK=0.2 CODES_FILE=/abs/codes.csv
//   P95_MS=200 P99_MS=500 MAX_FAILED_RATE=0 MIN_CHECKS_RATE=1
//
// Setup reactivates codes a previous, interrupted run left used; the codes end unused.

import exec from 'k6/execution';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import * as sign from './lib/sign.js';
import { loadCodes, resetToUnused } from './lib/codes.js';
import { envFloat, envInt, envStr, limitedLogger, standardThresholds } from './lib/config.js';

const VUS = envInt('VUS', 10);
const PER_VU = envInt('CODES_PER_VU', 5);
const DURATION = envStr('DURATION', '30s');
const RATE = envInt('RATE', 0);
const READBACK = envFloat('READBACK', 0.2);

const pool = loadCodes('reactivate-codes', ['unused', 'used']);

const cyclesOK = new Counter('cycles_ok');
const unexpected = new Counter('unexpected_failures');
const warn = limitedLogger(3);

const scenario = RATE > 0
  ? { executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s', duration: DURATION, preAllocatedVUs: VUS, maxVUs: VUS }
  : { executor: 'constant-vus', vus: VUS, duration: DURATION };
scenario.tags = { phase: 'load' };

export const options = {
  scenarios: { cycles: scenario },
  thresholds: Object.assign(
    standardThresholds({ p95: 200, p99: 500, failedRate: 0, checksRate: 1 }),
    { unexpected_failures: ['count==0'], cycles_ok: ['count>0'] },
  ),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

export function setup() {
  if (pool.length < VUS * PER_VU) {
    throw new Error(`reactivate needs ${VUS * PER_VU} unused or used codes (VUS ${VUS} x CODES_PER_VU ${PER_VU}); ` +
      `CODES_FILE has ${pool.length}`);
  }
  const n = resetToUnused(pool.slice(0, VUS * PER_VU), sign);
  console.log(`reactivate: ${VUS} VUs x ${PER_VU} codes each, ${n} reset by setup`);
}

let cursor = 0;

function failed(step, code, res) {
  unexpected.add(1, { step });
  warn(`${step} ${code}: HTTP ${res.status} ${res.body}`);
}

function readBack(code, wantUsed, who) {
  const res = sign.getCodeByValue(code);
  const c = sign.json(res);
  const ok = check(res, {
    'read-back: status 200': (r) => r.status === 200,
    'read-back: state is the acknowledged one': () => c !== null && c.status === wantUsed &&
      (wantUsed ? c.verified_by === who && Number.isInteger(c.verified_at) : c.verified_at === null),
  });
  if (!ok) {
    failed(wantUsed ? 'read-back after verify' : 'read-back after reactivate', code, res);
  }
  return ok;
}

export default function () {
  const vu = exec.vu.idInTest;
  if (vu > VUS) {
    throw new Error(`VU ${vu} has no codes: keep VUS at the number of VUs the scenario runs`);
  }
  const code = pool[(vu - 1) * PER_VU + (cursor++ % PER_VU)].code;
  const who = `k6-vu${vu}`;
  const withReadBack = Math.random() < READBACK;

  const v = sign.verify(code, who);
  const vb = sign.json(v);
  const verified = check(v, {
    'verify: status 200': (r) => r.status === 200,
    'verify: success=true': () => vb !== null && vb.success === true,
  });
  if (!verified) {
    failed('verify', code, v);
  }
  const seen = verified && withReadBack ? readBack(code, true, who) : true;

  // Reactivate even after a failed verify, so the code is unused for the next cycle.
  const r = sign.reactivate(code, who, 'k6 reactivate cycle');
  const rb = sign.json(r);
  const reactivated = check(r, {
    'reactivate: status 200': (x) => x.status === 200,
    'reactivate: success=true': () => rb !== null && rb.success === true,
  });
  if (!reactivated) {
    failed('reactivate', code, r);
  }
  const seenAgain = reactivated && withReadBack ? readBack(code, false, who) : true;
  if (verified && reactivated && seen && seenAgain) {
    cyclesOK.add(1);
  }
}
