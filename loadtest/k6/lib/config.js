// Environment parsing and the thresholds every scenario shares.
//
// Latency and error thresholds (each script passes its own defaults; the environment wins):
//   P95_MS           http_req_duration p(95) must stay below this many milliseconds
//   P99_MS           http_req_duration p(99) must stay below this many milliseconds
//   MAX_FAILED_RATE  http_req_failed (non-2xx/3xx answers and transport errors) rate at most this
//   MIN_CHECKS_RATE  the share of passed checks at least this
// They apply to the load phase only (metrics tagged phase:load), not to setup's requests.

import exec from 'k6/execution';

export function envStr(name, def) {
  const v = __ENV[name];
  return v === undefined || v === '' ? def : v;
}

export function envInt(name, def) {
  const v = envStr(name, undefined);
  if (v === undefined) {
    return def;
  }
  const n = parseInt(v, 10);
  if (!Number.isFinite(n) || String(n) !== String(v).trim()) {
    throw new Error(`${name}=${v} is not an integer`);
  }
  return n;
}

export function envFloat(name, def) {
  const v = envStr(name, undefined);
  if (v === undefined) {
    return def;
  }
  const n = Number(v);
  if (!Number.isFinite(n)) {
    throw new Error(`${name}=${v} is not a number`);
  }
  return n;
}

// seconds parses a k6 duration such as 90, 15s, 2m, 1m30s, 1h, 500ms.
export function seconds(d) {
  if (/^\d+(\.\d+)?$/.test(String(d))) {
    return Number(d);
  }
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let consumed = '';
  let m;
  while ((m = re.exec(d)) !== null) {
    consumed += m[0];
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : m[2] === 's' ? n : n / 1000;
  }
  if (consumed !== d) {
    throw new Error(`duration ${d}: use forms like 30s, 2m, 1m30s`);
  }
  return total;
}

// standardThresholds are the latency, failure and check thresholds of a script's load phase.
export function standardThresholds(defaults) {
  const p95 = envFloat('P95_MS', defaults.p95);
  const p99 = envFloat('P99_MS', defaults.p99);
  const failed = envFloat('MAX_FAILED_RATE', defaults.failedRate);
  const checks = envFloat('MIN_CHECKS_RATE', defaults.checksRate);
  return {
    'http_req_duration{phase:load}': [`p(95)<${p95}`, `p(99)<${p99}`],
    'http_req_failed{phase:load}': [`rate<=${failed}`],
    'checks{phase:load}': [`rate>=${checks}`],
    // Not a limit: makes the load phase's request count and rate part of the summary export.
    'http_reqs{phase:load}': ['count>0'],
  };
}

// limitedLogger prints at most `max` messages per VU, and only from the first ten VUs, so a
// failing run explains itself without flooding the console.
export function limitedLogger(max) {
  let n = 0;
  return (msg) => {
    if (n < max && exec.vu.idInTest <= 10) {
      n++;
      console.warn(msg);
    }
  };
}
