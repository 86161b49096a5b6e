#!/usr/bin/env bash
# run-k6.sh: run the k6 scenarios of loadtest/k6 end to end against a local acv.
#
#   loadtest/run-k6.sh                        # every scenario: redeem contention reactivate readmix
#   loadtest/run-k6.sh redeem readmix         # some of them
#   DURATION=60s REDEEM_RATE=300 loadtest/run-k6.sh
#
# By default it starts its own stack (`acv dev` with its own data directory, on a free loopback
# port), prepares codes with `acv codes generate` + `acv codes export`, runs each scenario for
# DURATION, prints a table and stops the stack. It exits non-zero when any scenario misses a
# threshold (or fails to run).
#
# STACK=running uses a stack that is already up (`make run`): set ACV_REDIS_URL and
# ACV_DATABASE_URL from its banner (the admin commands need them, and the master key: the
# stack's .acv/master.key unless ACV_MASTER_KEY or ACV_MASTER_KEY_FILE is set); BASE_URL defaults to
# http://127.0.0.1:8080 and DEMO_JSON to .acv/demo.json. Codes are added to the demo project.
#
# Settings (environment):
#   DURATION=15s          length of each scenario
#   REDEEM_RATE=100       verifies/s of redeem.js
#   CONTENTION_VUS=50     VUs of contention.js (CONTENTION_CODES=5 codes)
#   REACTIVATE_VUS=10     VUs of reactivate.js (5 codes each)
#   READMIX_RATE=50       reads/s of readmix.js
#   LOADTEST_DIR          where the stack's data, the codes and the results go (default: a new
#                         directory under /tmp); results stay in $LOADTEST_DIR/results
#   K6                    k6 binary (default: k6 on PATH, else $(go env GOPATH)/bin/k6, installed
#                         with `go install go.k6.io/k6@${K6_VERSION:-latest}` when missing)
# Thresholds (P95_MS, P99_MS, MAX_FAILED_RATE, MIN_CHECKS_RATE, ...) are read by the scripts
# from the environment; see loadtest/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

DURATION=${DURATION:-15s}
REDEEM_RATE=${REDEEM_RATE:-100}
CONTENTION_VUS=${CONTENTION_VUS:-50}
CONTENTION_CODES=${CONTENTION_CODES:-5}
REACTIVATE_VUS=${REACTIVATE_VUS:-10}
REACTIVATE_PER_VU=${REACTIVATE_PER_VU:-5}
READMIX_RATE=${READMIX_RATE:-50}
STACK=${STACK:-own}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(redeem contention reactivate readmix)

WORK=${LOADTEST_DIR:-$(mktemp -d /tmp/acv-k6.XXXXXX)}
# PostgreSQL runs as the postgres user when we are root: it must be able to reach its data
# directory inside ours (mktemp makes it 0700).
chmod 755 "$WORK"
mkdir -p "$WORK/results"
WORK=$(cd "$WORK" && pwd)
RESULTS=$WORK/results
ACV=$ROOT/bin/acv
DEV_PID=

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'run-k6: %s\n' "$*" >&2; exit 2; }

for s in "${SCENARIOS[@]}"; do
	[ -f "loadtest/k6/$s.js" ] || die "no scenario loadtest/k6/$s.js"
done

# seconds DURATION: the k6 duration in whole seconds (15s, 2m, 1m30s, 90).
seconds() {
	local d=$1 total=0 n unit
	if [[ $d =~ ^[0-9]+$ ]]; then echo "$d"; return; fi
	while [[ $d =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} d=${BASH_REMATCH[3]}
		case $unit in h) total=$((total + n * 3600)) ;; m) total=$((total + n * 60)) ;; s) total=$((total + n)) ;; esac
	done
	[ -z "$d" ] || die "DURATION: use forms like 15s, 2m, 1m30s"
	echo "$total"
}
SECS=$(seconds "$DURATION")

# --- tools ---------------------------------------------------------------------------------
find_k6() {
	if [ -n "${K6:-}" ]; then echo "$K6"; return; fi
	if command -v k6 >/dev/null; then command -v k6; return; fi
	local gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin=$(go env GOPATH)/bin
	if [ ! -x "$gobin/k6" ]; then
		log "installing k6 with go install go.k6.io/k6@${K6_VERSION:-latest} (compiles for a few minutes)"
		go install "go.k6.io/k6@${K6_VERSION:-latest}" >&2
	fi
	echo "$gobin/k6"
}
K6=$(find_k6)
"$K6" version >&2

if [ ! -x "$ACV" ]; then
	log "building bin/acv"
	go build -o "$ACV" ./cmd/acv
fi

# --- the stack -----------------------------------------------------------------------------
stop_stack() {
	if [ -n "$DEV_PID" ] && kill -0 "$DEV_PID" 2>/dev/null; then
		log "stopping acv dev (pid $DEV_PID)"
		kill -TERM "$DEV_PID" 2>/dev/null || true
		for _ in $(seq 60); do kill -0 "$DEV_PID" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$DEV_PID" 2>/dev/null && kill -KILL "$DEV_PID" 2>/dev/null || true
		wait "$DEV_PID" 2>/dev/null || true
	fi
	DEV_PID=
	if [ "$STACK" = own ] && [ -z "${KEEP_STACK_DATA:-}" ]; then
		rm -rf "$WORK/stack"
	fi
}
trap stop_stack EXIT
trap 'exit 130' INT TERM

json_field() { sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" "$1" | head -n 1; }

case $STACK in
own)
	if ! command -v redis-server >/dev/null || [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then
		log "installing redis-server and PostgreSQL 15 (make deps)"
		make -s deps
	fi
	log "starting acv dev in $WORK/stack (log: $WORK/acv-dev.log)"
	"$ACV" dev --dir "$WORK/stack" --addr 127.0.0.1:0 >"$WORK/acv-dev.log" 2>&1 &
	DEV_PID=$!
	for _ in $(seq 240); do
		grep -q '^acv is running on ' "$WORK/acv-dev.log" && break
		kill -0 "$DEV_PID" 2>/dev/null || { tail -n 30 "$WORK/acv-dev.log" >&2; die "acv dev exited"; }
		sleep 0.5
	done
	banner=$(grep -m1 '^acv is running on ' "$WORK/acv-dev.log") || die "acv dev printed no banner within 120 s"
	BASE_URL=$(sed -n 's/^acv is running on \(http:[^ ]*\) .*/\1/p' <<<"$banner")
	ACV_REDIS_URL="redis://$(sed -n 's/.*(Redis \([^,]*\), PostgreSQL.*/\1/p' <<<"$banner")/0"
	ACV_DATABASE_URL=$(sed -n 's/.*, PostgreSQL \([^ ,]*\), Kafka.*/\1/p' <<<"$banner")
	DEMO_JSON=$WORK/stack/demo.json
	ACV_MASTER_KEY_FILE=$WORK/stack/master.key
	unset ACV_MASTER_KEY
	;;
running)
	: "${ACV_REDIS_URL:?STACK=running needs ACV_REDIS_URL (see the banner of make run)}"
	: "${ACV_DATABASE_URL:?STACK=running needs ACV_DATABASE_URL (see the banner of make run)}"
	BASE_URL=${BASE_URL:-http://127.0.0.1:8080}
	DEMO_JSON=${DEMO_JSON:-.acv/demo.json}
	[ -n "${ACV_MASTER_KEY:-}" ] || ACV_MASTER_KEY_FILE=${ACV_MASTER_KEY_FILE:-.acv/master.key}
	;;
*) die "STACK must be own or running" ;;
esac
export ACV_REDIS_URL ACV_DATABASE_URL
[ -z "${ACV_MASTER_KEY_FILE:-}" ] || export ACV_MASTER_KEY_FILE
case $BASE_URL in
http://127.0.0.1:* | http://localhost:* | http://\[::1\]:*) ;;
*) die "BASE_URL $BASE_URL is not on loopback; this script only drives a local stack" ;;
esac
[ -f "$DEMO_JSON" ] || die "no $DEMO_JSON"
PROJECT_ID=$(json_field "$DEMO_JSON" project_id)
API_KEY=$(json_field "$DEMO_JSON" key_id)
API_SECRET=$(json_field "$DEMO_JSON" secret)
[ -n "$PROJECT_ID" ] && [ -n "$API_KEY" ] && [ -n "$API_SECRET" ] || die "cannot read project_id, key_id, secret from $DEMO_JSON"
curl -fsS "$BASE_URL/healthz" >/dev/null || die "$BASE_URL/healthz does not answer"
log "acv at $BASE_URL, project $PROJECT_ID, key $API_KEY"

# --- codes ---------------------------------------------------------------------------------
# One batch per scenario, told apart by prefix (CODE_PREFIX), so no scenario uses another's
# codes. The readmix batch's prefix holds characters that must be percent-encoded in a path and
# a query ('/', '+', '%', '?', '#', '&', '=', a space, a non-ASCII letter) and LIKE wildcards.
RUN=$(date +%s)
P_REDEEM="K6R$RUN-"
P_CONT="K6C$RUN-"
P_REACT="K6A$RUN-"
P_ODD="k6 $RUN a+b/c%d_e?f#g&h=ü-"
gen() { "$ACV" codes generate --project "$PROJECT_ID" --count "$1" --length 10 --prefix "$2" >/dev/null 2>>"$WORK/admin.log"; }
want() { printf '%s\n' "${SCENARIOS[@]}" | grep -qx "$1"; }
log "generating codes"
want redeem && gen $((REDEEM_RATE * SECS + REDEEM_RATE * SECS / 10 + 10)) "$P_REDEEM"
want contention && gen "$CONTENTION_CODES" "$P_CONT"
want reactivate && gen $((REACTIVATE_VUS * REACTIVATE_PER_VU)) "$P_REACT"
want readmix && gen 200 "$P_ODD"
CODES_FILE=$WORK/codes.csv
"$ACV" codes export --project "$PROJECT_ID" -o "$CODES_FILE" 2>>"$WORK/admin.log"
log "exported $(($(wc -l <"$CODES_FILE") - 1)) codes to $CODES_FILE"

# --- scenarios -----------------------------------------------------------------------------
run_k6() {
	local name=$1
	shift
	log "k6 run $name.js ($DURATION)"
	set +e
	"$K6" run --no-usage-report --quiet \
		--summary-export "$RESULTS/$name.json" \
		-e BASE_URL="$BASE_URL" -e API_KEY="$API_KEY" -e API_SECRET="$API_SECRET" -e PROJECT_ID="$PROJECT_ID" \
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
