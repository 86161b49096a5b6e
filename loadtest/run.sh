#!/usr/bin/env bash
# run.sh (make loadtest): the four load scenarios — redeem, contention, reactivate, readmix —
# with the project's own Go load generator (`acvload scenario`, loadtest/loadgen), end to end
# against a local acv. The same scenarios, thresholds and checks as the k6 scripts of loadtest/k6
# (loadtest/run-k6.sh runs those with a k6 you installed); nothing here needs k6.
#
#   loadtest/run.sh                        # every scenario, against a stack of its own
#   loadtest/run.sh redeem readmix         # some of them
#   DURATION=60s REDEEM_RATE=300 loadtest/run.sh
#   STACK=running loadtest/run.sh          # against the stack of `make run` (.acv/env)
#
# It starts its own stack (`acv dev` with its own data directory, on free loopback ports) or
# uses the running one, generates and exports codes, runs the scenarios for DURATION each,
# prints a table and stops its stack. It exits non-zero when a scenario misses a threshold or
# cannot run. The load generator serves its own metrics (acv_loadtest_*) on a loopback /metrics
# it prints; when the stack runs a Prometheus (make run PROMETHEUS=1, then STACK=running), it
# registers there, so the load run shows beside the service's series.
#
# Settings: those of loadtest/stack.sh (STACK, DURATION, LOADTEST_DIR, …), the scenarios' (
# REDEEM_RATE, CONTENTION_VUS, READMIX_RATE, …) and the thresholds (P95_MS, P99_MS,
# MAX_FAILED_RATE, MIN_CHECKS_RATE): loadtest/README.md. ACVLOAD names the acvload binary
# (default bin/acvload, built when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(redeem contention reactivate readmix)
# shellcheck source=loadtest/stack.sh
. "$ROOT/loadtest/stack.sh"
for s in "${SCENARIOS[@]}"; do
	case $s in redeem | contention | reactivate | readmix) ;; *) die "no scenario $s (redeem contention reactivate readmix)" ;; esac
done

ACVLOAD=${ACVLOAD:-$ROOT/bin/acvload}
if [ ! -x "$ACVLOAD" ]; then
	log "building $ACVLOAD"
	go build -o "$ACVLOAD" ./cmd/acvload
fi

stack_start
stack_codes

# acvload reads its settings from the environment, as the k6 scripts do; the secret stays off
# the command line.
export BASE_URL API_KEY API_SECRET PROJECT_ID CODES_FILE DURATION REDEEM_RATE CONTENTION_CODES REACTIVATE_VUS REACTIVATE_PER_VU
export REDEEM_PREFIX=$P_REDEEM CONTENTION_PREFIX=$P_CONT REACTIVATE_PREFIX=$P_REACT
log "acvload scenario ${SCENARIOS[*]} ($DURATION each)"
set +e
"$ACVLOAD" scenario -prometheus-targets "$PROM_TARGETS" -json "$RESULTS/acvload.json" "${SCENARIOS[@]}" \
	2> >(tee "$RESULTS/acvload.log" >&2) | tee "$RESULTS/table.txt"
status=${PIPESTATUS[0]}
set -e
printf '\nresults: %s (acvload.log: each scenario'"'"'s thresholds; acvload.json)\n' "$RESULTS"
exit "$status"
