// redeem.js: distinct-code redemption at a target rate.
//
// An open model (constant-arrival-rate): RATE verifies per second for DURATION, whatever the
// latency, each on a different unused code from CODES_FILE (iteration n takes code n of the
// test, so no two requests share a code). Every verify must answer 200 with success=true and the
// code's id; anything else counts in unexpected_failures, whose threshold is count==0.
//
//   RATE=50 DURATION=30s VUS=50 MAX_VUS=200 CODES_FILE=/abs/codes.csv
//   MAX_DROPPED_RATE=0.01   share of scheduled iterations k6 may drop for want of a free VU
//                           (a sign the service cannot keep up with RATE)
//   P95_MS=200 P99_MS=500 MAX_FAILED_RATE=0 MIN_CHECKS_RATE=1
//   AUDIT_SAMPLE=20 AUDIT_WAIT_SECS=15
//
// Teardown then checks the audit pipeline: for AUDIT_SAMPLE codes spread over the run, the
// code read by value must show exactly one verification log, the successful verify, within
// AUDIT_WAIT_SECS (the contract: an acknowledged verify's log is never lost, never written
// twice, and normally arrives well under a second later). audit_log_missing and
// audit_log_duplicated must both stay 0.
//
// It consumes RATE x DURATION codes: they stay used. Export fresh ones for the next run.

import exec from 'k6/execution';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import * as sign from './lib/sign.js';
import { loadCodes } from './lib/codes.js';
import { envFloat, envInt, envStr, limitedLogger, seconds, standardThresholds } from './lib/config.js';

const RATE = envInt('RATE', 50);
const DURATION = envStr('DURATION', '30s');
const VUS = envInt('VUS', 50);
const MAX_VUS = envInt('MAX_VUS', Math.max(VUS, 4 * VUS));
// An arrival-rate scenario starts one iteration at its very end too, hence the + 1.
const NEEDED = Math.floor(RATE * seconds(DURATION)) + 1;
const MAX_DROPPED = Math.floor(envFloat('MAX_DROPPED_RATE', 0.01) * NEEDED);

const AUDIT_SAMPLE = envInt('AUDIT_SAMPLE', 20);
const AUDIT_WAIT_SECS = envFloat('AUDIT_WAIT_SECS', 15);
const VERIFIED_BY = 'k6-redeem';

const codes = loadCodes('redeem-codes', ['unused']);

const unexpected = new Counter('unexpected_failures');
const redeemed = new Counter('redeem_success');
const auditMissing = new Counter('audit_log_missing');
const auditDuplicated = new Counter('audit_log_duplicated');
const warn = limitedLogger(3);

export const options = {
  scenarios: {
    redeem: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: VUS,
      maxVUs: MAX_VUS,
      tags: { phase: 'load' },
    },
  },
  thresholds: Object.assign(
    standardThresholds({ p95: 200, p99: 500, failedRate: 0, checksRate: 1 }),
    {
      unexpected_failures: ['count==0'],
      audit_log_missing: ['count==0'],
      audit_log_duplicated: ['count==0'],
      dropped_iterations: [`count<=${MAX_DROPPED}`],
    },
  ),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

export function setup() {
  if (codes.length < NEEDED) {
    throw new Error(`redeem needs ${NEEDED} unused codes (RATE ${RATE}/s x ${DURATION}); ` +
      `CODES_FILE has ${codes.length}. Generate more with \`acv codes generate\` and export again.`);
  }
  console.log(`redeem: ${RATE} verifies/s for ${DURATION} over ${NEEDED} of ${codes.length} unused codes`);
}

export default function () {
  const i = exec.scenario.iterationInTest;
  if (i >= codes.length) {
    unexpected.add(1, { reason: 'codes_exhausted' });
    warn(`iteration ${i}: no unused code left in CODES_FILE`);
    return;
  }
  const row = codes[i];
  const res = sign.verify(row.code, VERIFIED_BY);
  const b = sign.json(res);
  const ok = check(res, {
    'verify: status 200': (r) => r.status === 200,
    'verify: success=true': () => b !== null && b.success === true,
    'verify: code_id is the code\'s id': () => b !== null && b.code_id === row.id,
    'verify: verified_at set': () => b !== null && Number.isInteger(b.verified_at),
  });
  if (ok) {
    redeemed.add(1);
    return;
  }
  const reason = b && b.error_code ? b.error_code : `http_${res.status}`;
  unexpected.add(1, { reason });
  warn(`verify ${row.code}: HTTP ${res.status} ${res.body}`);
}

// teardown samples codes of the run and waits for each verified one's verification log.
export function teardown() {
  const span = Math.min(NEEDED, codes.length);
  const n = Math.min(AUDIT_SAMPLE, span);
  let pending = [];
  for (let k = 0; k < n; k++) {
    pending.push(codes[Math.floor((k * span) / n)]);
  }
  const deadline = Date.now() + AUDIT_WAIT_SECS * 1000;
  let checked = 0;
  while (pending.length > 0) {
    const again = [];
    for (const row of pending) {
      const res = sign.getCodeByValue(row.code, { tags: { phase: 'teardown' } });
      const c = sign.json(res);
      if (res.status !== 200 || c === null || !Array.isArray(c.verification_logs)) {
        again.push(row);
        continue;
      }
      if (c.status !== true) {
        continue; // never verified: its iteration was dropped or failed (counted elsewhere)
      }
      const logs = c.verification_logs;
      const ok = logs.length === 1 && logs[0].result === 'success' && logs[0].verified_by === VERIFIED_BY;
      if (ok) {
        checked++;
      } else if (logs.length > 1) {
        auditDuplicated.add(1);
        console.warn(`audit: ${row.code} has ${logs.length} verification logs, want 1: ${JSON.stringify(logs)}`);
      } else if (logs.length === 1) {
        auditMissing.add(1);
        console.warn(`audit: ${row.code}: the one log is not the successful verify: ${JSON.stringify(logs)}`);
      } else {
        again.push(row);
      }
    }
    pending = again;
    if (pending.length > 0) {
      if (Date.now() >= deadline) {
        break;
      }
      sleep(0.5);
    }
  }
  for (const row of pending) {
    auditMissing.add(1);
    console.warn(`audit: no verification log for ${row.code} after ${AUDIT_WAIT_SECS} s`);
  }
  console.log(`audit: ${checked} sampled codes show exactly their verify's log; ${pending.length} missing`);
}
