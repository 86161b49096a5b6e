#!/usr/bin/env bash
# run-k6.sh: run the k6 scripts of loadtest/k6 end to end against a local acv, with a k6 you
# installed yourself: k6 is AGPL-licensed, so the project ships its scripts but never fetches,
# builds or installs k6 (loadtest/README.md says how to get it from k6's own distribution).
# `make loadtest` runs the same scenarios with the project's own Go load generator instead
# (loadtest/run.sh).
#
#   loadtest/run-k6.sh                        # every scenario: redeem contention reactivate readmix
#   loadtest/run-k6.sh redeem readmix         # some of them
#   DURATION=60s REDEEM_RATE=300 loadtest/run-k6.sh
#   STACK=running loadtest/run-k6.sh          # against the stack of `make run` (.acv/env)
#
# By default it starts its own stack (`acv dev` with its own data directory, on free loopback
# ports), prepares codes with `acv codes generate` + `acv codes export`, runs each scenario for
# DURATION, prints a table and stops the stack. It exits non-zero when any scenario misses a
# threshold (or fails to run). STACK=running uses the stack that make run's env file names
# (ACV_DEV_ENV, default .acv/env: its API address, Redis, PostgreSQL and master key), never a
# default port; codes are added to its demo project.
#
# Settings (environment): those of loadtest/stack.sh (STACK, DURATION, LOADTEST_DIR, …) and
#   REDEEM_RATE=100       verifies/s of redeem.js
#   CONTENTION_VUS=50     VUs of contention.js (CONTENTION_CODES=5 codes)
#   REACTIVATE_VUS=10     VUs of reactivate.js (REACTIVATE_PER_VU=5 codes each)
#   READMIX_RATE=50       reads/s of readmix.js
#   K6                    the k6 binary (default: k6 on PATH)
# Thresholds (P95_MS, P99_MS, MAX_FAILED_RATE, MIN_CHECKS_RATE, ...) are read by the scripts
# from the environment; see loadtest/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

CONTENTION_VUS=${CONTENTION_VUS:-50}
READMIX_RATE=${READMIX_RATE:-50}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(redeem contention reactivate readmix)

# k6 is the user's own: this script only looks for it.
K6=${K6:-$(command -v k6 || true)}
if [ -z "$K6" ] || [ ! -x "$K6" ]; then
	echo "run-k6.sh: no k6: install it from k6's own distribution (loadtest/README.md, \"Installing k6\"), put it on PATH or set K6; make loadtest runs the same scenarios without k6" >&2
	exit 2
fi
"$K6" version >&2

# shellcheck source=loadtest/stack.sh
. "$ROOT/loadtest/stack.sh"
for s in "${SCENARIOS[@]}"; do
	[ -f "loadtest/k6/$s.js" ] || die "no scenario loadtest/k6/$s.js"
done

stack_start
stack_codes

# --- scenarios -----------------------------------------------------------------------------
# k6 reads exported variables as __ENV: the secret stays off the command line.
export API_SECRET
run_k6() {
	local name=$1
	shift
	log "k6 run $name.js ($DURATION)"
	set +e
	"$K6" run --no-usage-report --quiet \
		--summary-export "$RESULTS/$name.json" \
		-e BASE_URL="$BASE_URL" -e API_KEY="$API_KEY" -e PROJECT_ID="$PROJECT_ID" \
		-e CODES_FILE="$CODES_FILE" -e DURATION="$DURATION" "$@" \
		"loadtest/k6/$name.js" 2>&1 | tee "$RESULTS/$name.txt"
	echo "${PIPESTATUS[0]}" >"$RESULTS/$name.rc"
	set -e
}

for s in "${SCENARIOS[@]}"; do
	case $s in
	redeem) run_k6 redeem -e RATE="$REDEEM_RATE" -e CODE_PREFIX="$P_REDEEM" ;;
	contention) run_k6 contention -e VUS="$CONTENTION_VUS" -e CODES="$CONTENTION_CODES" -e CODE_PREFIX="$P_CONT" ;;
	reactivate) run_k6 reactivate -e VUS="$REACTIVATE_VUS" -e CODES_PER_VU="$REACTIVATE_PER_VU" -e CODE_PREFIX="$P_REACT" ;;
	readmix) run_k6 readmix -e RATE="$READMIX_RATE" ;;
	*) run_k6 "$s" ;;
	esac
done

# --- report --------------------------------------------------------------------------------
status=0
printf '\n%-11s %9s %9s %9s %9s  %s\n' scenario requests 'req/s' 'p95 ms' 'p99 ms' result
for s in "${SCENARIOS[@]}"; do
	rc=$(cat "$RESULTS/$s.rc" 2>/dev/null || echo 2)
	case $rc in 0) res=pass ;; 99) res="FAIL (thresholds)" ;; *) res="FAIL (k6 exit $rc)" ;; esac
	[ "$rc" = 0 ] || status=1
	if command -v jq >/dev/null && [ -s "$RESULTS/$s.json" ]; then
		jq -r --arg s "$s" --arg res "$res" '
			.metrics as $m
			| ($m["http_reqs{phase:load}"] // {}) as $r
			| ($m["http_req_duration{phase:load}"] // {}) as $d
			| [$s, ($r.count // 0), (($r.rate // 0) * 10 | round / 10), (($d["p(95)"] // 0) * 10 | round / 10),
			   (($d["p(99)"] // 0) * 10 | round / 10), $res]
			| "\(.[0])\t\(.[1])\t\(.[2])\t\(.[3])\t\(.[4])\t\(.[5])"' "$RESULTS/$s.json" |
			awk -F'\t' '{ printf "%-11s %9s %9s %9s %9s  %s\n", $1, $2, $3, $4, $5, $6 }'
	else
		printf '%-11s %9s %9s %9s %9s  %s\n' "$s" - - - - "$res"
	fi
done
printf '\nresults: %s (k6 summaries *.txt, JSON *.json)\n' "$RESULTS"
exit $status
