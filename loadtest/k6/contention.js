// contention.js: many VUs race for few codes; each code must be redeemed exactly once per round.
//
// The run is a sequence of ROUNDS rounds, each of two phases on a fixed timetable:
//
//   verify phase (VERIFY_SECS)       VUS VUs start together; each sends ATTEMPTS batches of
//                                    verifies, one concurrent verify per code (VUS x ATTEMPTS
//                                    verifies per code per round, VUS at a time)
//   reactivate phase (REACTIVATE_SECS) one VU reactivates every code, so the next round starts
//                                    from unused codes again
//
// Between two reactivations of a code, all verifies of that code belong to one round's verify
// phase, the code starts unused and unexpired, and at least one verify is sent: a correct
// service answers success=true to exactly one of them. Each success is counted in the Counter
// redeem_success tagged with its round and code, and a threshold per (round, code) requires
// count==1. Every other verify must be the business refusal CODE_ALREADY_USED; every
// reactivate must succeed.
//
// The check relies on the phases not overlapping. Both phases measure themselves against the
// timetable: a verify answered after its phase's end, or a reactivate answered after its round's
// end, counts in phase_overrun (threshold count==0), and an interrupted verifier iteration shows
// as verifier_iterations_completed below VUS x ROUNDS. If either fails, the round counts are not
// evidence of a product bug: give the phases more time (VERIFY_SECS, REACTIVATE_SECS) or fewer VUs.
//
//   VUS=50 CODES=5 ATTEMPTS=2 VERIFY_SECS=2 REACTIVATE_SECS=1
//   ROUNDS (default: DURATION / (VERIFY_SECS + REACTIVATE_SECS), DURATION default 15s)
//   CODES_FILE=/abs/codes.csv  the first CODES codes that are unused or used (setup reactivates
//                              used ones); they end unused, so the same file serves every run
//   P95_MS=1000 P99_MS=2000 MAX_FAILED_RATE=0 MIN_CHECKS_RATE=1

import http from 'k6/http';
import exec from 'k6/execution';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import * as sign from './lib/sign.js';
import { loadCodes, resetToUnused } from './lib/codes.js';
import { envFloat, envInt, envStr, limitedLogger, seconds, standardThresholds } from './lib/config.js';

const VUS = envInt('VUS', 50);
const N = envInt('CODES', 5);
const ATTEMPTS = envInt('ATTEMPTS', 2);
const VERIFY_MS = Math.round(envFloat('VERIFY_SECS', 2) * 1000);
const REACT_MS = Math.round(envFloat('REACTIVATE_SECS', 1) * 1000);
const ROUND_MS = VERIFY_MS + REACT_MS;
if (VERIFY_MS < 1000 || REACT_MS < 1000) {
  // k6 refuses a scenario maxDuration under one second.
  throw new Error('VERIFY_SECS and REACTIVATE_SECS must be at least 1');
}
const ROUNDS = envInt('ROUNDS', Math.max(1, Math.floor((seconds(envStr('DURATION', '15s')) * 1000) / ROUND_MS)));

const pool = loadCodes('contention-codes', ['unused', 'used']);

const redeemSuccess = new Counter('redeem_success');
const reactivateSuccess = new Counter('reactivate_success');
const verifyAttempts = new Counter('verify_attempts');
const unexpected = new Counter('unexpected_failures');
const overrun = new Counter('phase_overrun');
const verifierDone = new Counter('verifier_iterations_completed');
const warn = limitedLogger(3);

function buildOptions() {
  const scenarios = {};
  const thresholds = Object.assign(
    standardThresholds({ p95: 1000, p99: 2000, failedRate: 0, checksRate: 1 }),
    {
      unexpected_failures: ['count==0'],
      phase_overrun: ['count==0'],
      verifier_iterations_completed: [`count==${VUS * ROUNDS}`],
      redeem_success: [`count==${N * ROUNDS}`],
      reactivate_success: [`count==${N * ROUNDS}`],
    },
  );
  for (let r = 0; r < ROUNDS; r++) {
    scenarios[`verify_r${r}`] = {
      executor: 'per-vu-iterations',
      vus: VUS,
      iterations: 1,
      startTime: `${r * ROUND_MS}ms`,
      maxDuration: `${VERIFY_MS}ms`,
      // Long enough to finish (and report) an overrunning iteration, short enough that rounds
      // never hold two sets of verifier VUs.
      gracefulStop: `${REACT_MS}ms`,
      exec: 'verifyRound',
      env: { ROUND: String(r) },
      tags: { phase: 'load', round: String(r) },
    };
    scenarios[`reactivate_r${r}`] = {
      executor: 'per-vu-iterations',
      vus: 1,
      iterations: 1,
      startTime: `${r * ROUND_MS + VERIFY_MS}ms`,
      maxDuration: `${REACT_MS}ms`,
      gracefulStop: `${VERIFY_MS}ms`,
      exec: 'reactivateRound',
      env: { ROUND: String(r) },
      tags: { phase: 'load', round: String(r) },
    };
    for (let c = 0; c < N; c++) {
      thresholds[`redeem_success{round:${r},code:${c}}`] = ['count==1'];
    }
  }
  return {
    scenarios,
    thresholds,
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  };
}

export const options = buildOptions();

function codesOfTest() {
  if (pool.length < N) {
    throw new Error(`contention needs ${N} unused or used codes in CODES_FILE; it has ${pool.length}`);
  }
  return pool.slice(0, N);
}

function waitUntil(t) {
  const d = t - Date.now();
  if (d > 0) {
    sleep(d / 1000);
  }
}

export function setup() {
  const codes = codesOfTest();
  const n = resetToUnused(codes, sign);
  // Give every (round, code) series a sample, so a round in which no verify succeeded shows
  // count 0 rather than no series at all.
  for (let r = 0; r < ROUNDS; r++) {
    for (let c = 0; c < N; c++) {
      redeemSuccess.add(0, { round: String(r), code: String(c) });
    }
  }
  console.log(`contention: ${ROUNDS} rounds of ${VERIFY_MS} ms verify + ${REACT_MS} ms reactivate; ` +
    `${VUS} VUs x ${ATTEMPTS} attempts on ${N} codes (${n} reset by setup)`);
  // The timetable's origin: the scenarios' start times count from the end of setup.
  return { base: Date.now(), codes: codes.map((x) => x.code) };
}

export function verifyRound(data) {
  const r = Number(__ENV.ROUND);
  const start = data.base + r * ROUND_MS;
  const end = start + VERIFY_MS;
  waitUntil(start);
  const who = `k6-vu${exec.vu.idInTest}`;
  for (let a = 0; a < ATTEMPTS; a++) {
    // A later attempt that could not finish inside the phase is not sent.
    if (a > 0 && Date.now() > end - VERIFY_MS / 4) {
      break;
    }
    const reqs = data.codes.map((code, c) => sign.verifyRequest(code, who, { tags: { code: String(c) } }));
    const responses = http.batch(reqs);
    if (Date.now() > end) {
      overrun.add(1, { phase_name: 'verify' });
      warn(`round ${r}: a verify batch was answered ${Date.now() - end} ms after the verify phase ended`);
    }
    responses.forEach((res, c) => {
      verifyAttempts.add(1);
      const b = sign.json(res);
      const won = res.status === 200 && b !== null && b.success === true;
      const lost = res.status === 200 && b !== null && b.success === false && b.error_code === 'CODE_ALREADY_USED';
      check(res, {
        'verify: status 200': (x) => x.status === 200,
        'verify: success or CODE_ALREADY_USED': () => won || lost,
      });
      if (won) {
        redeemSuccess.add(1, { round: String(r), code: String(c) });
      } else if (!lost) {
        unexpected.add(1, { action: 'verify' });
        warn(`round ${r} verify ${data.codes[c]}: HTTP ${res.status} ${res.body}`);
      }
    });
  }
  verifierDone.add(1);
}

export function reactivateRound(data) {
  const r = Number(__ENV.ROUND);
  const notBefore = data.base + r * ROUND_MS + VERIFY_MS;
  const end = data.base + (r + 1) * ROUND_MS;
  waitUntil(notBefore);
  data.codes.forEach((code, c) => {
    const res = sign.reactivate(code, 'k6-contention', `round ${r}`, { tags: { code: String(c) } });
    if (Date.now() > end) {
      overrun.add(1, { phase_name: 'reactivate' });
      warn(`round ${r}: a reactivate was answered ${Date.now() - end} ms after the round ended`);
    }
    const b = sign.json(res);
    const ok = check(res, {
      'reactivate: status 200': (x) => x.status === 200,
      'reactivate: success=true': () => b !== null && b.success === true,
    });
    if (ok) {
      reactivateSuccess.add(1, { round: String(r), code: String(c) });
    } else {
      unexpected.add(1, { action: 'reactivate' });
      warn(`round ${r} reactivate ${code}: HTTP ${res.status} ${res.body}`);
    }
  });
}
