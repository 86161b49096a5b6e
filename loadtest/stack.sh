# stack.sh: the stack and the codes of a load test, shared by loadtest/run.sh (the project's Go
# load generator, `make loadtest`) and loadtest/run-k6.sh (k6). Sourced, not run: the caller sets
# ROOT and SCENARIOS first, then calls stack_start and stack_codes.
#
# Settings (environment):
#   STACK=own          own: start `acv dev` with a data directory of its own on free loopback
#                      ports, stopped at the end; running: use the stack of `make run`, as its
#                      env file names it (ACV_DEV_ENV, default .acv/env): API address, Redis,
#                      PostgreSQL, master key, and its Prometheus when it runs one. Nothing is
#                      assumed: no default port is tried.
#   DURATION=15s       length of each scenario
#   REDEEM_RATE=100, CONTENTION_CODES=5, REACTIVATE_VUS=10, REACTIVATE_PER_VU=5
#                      how many codes each scenario gets
#   LOADTEST_DIR       where the stack's data, the codes and the results go (created when
#                      missing; default: a new directory under /tmp); results in $LOADTEST_DIR/results
#   ACV                the acv binary (default bin/acv, built when missing)
#   KEEP_STACK_DATA=1  keep the own stack's data directory
#
# After stack_start: BASE_URL, PROJECT_ID, API_KEY, API_SECRET, WORK, RESULTS, and PROM_TARGETS,
# the targets directory of the stack's Prometheus (empty when it runs none). After stack_codes:
# CODES_FILE and the scenarios' code prefixes P_REDEEM, P_CONT, P_REACT.

DURATION=${DURATION:-15s}
REDEEM_RATE=${REDEEM_RATE:-100}
CONTENTION_CODES=${CONTENTION_CODES:-5}
REACTIVATE_VUS=${REACTIVATE_VUS:-10}
REACTIVATE_PER_VU=${REACTIVATE_PER_VU:-5}
STACK=${STACK:-own}
ACV=${ACV:-$ROOT/bin/acv}
DEV_PID=
PROM_TARGETS=

log() { printf '==> %s\n' "$*" >&2; }
die() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; exit 2; }

# seconds DURATION: the duration in whole seconds (15s, 2m, 1m30s, 90).
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

if [ -n "${LOADTEST_DIR:-}" ]; then
	mkdir -p "$LOADTEST_DIR" || die "cannot create LOADTEST_DIR $LOADTEST_DIR"
	WORK=$LOADTEST_DIR
else
	WORK=$(mktemp -d /tmp/acv-loadtest.XXXXXX)
fi
# PostgreSQL runs as the postgres user when we are root: it must be able to reach its data
# directory inside ours (mktemp makes it 0700).
chmod 755 "$WORK"
WORK=$(cd "$WORK" && pwd)
RESULTS=$WORK/results
mkdir -p "$RESULTS"

if [ ! -x "$ACV" ]; then
	log "building $ACV"
	go build -o "$ACV" ./cmd/acv
fi

stack_stop() {
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

# dev_var FILE NAME: the value the env file of acv dev gives NAME, as a shell that sources it
# sees it (and only the file: an exported NAME of ours does not leak in).
dev_var() { (unset "$2" && . "$1" >/dev/null 2>&1 && printf %s "${!2:-}"); }

json_field() { sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" "$1" | head -n 1; }

# stack_start: start the own stack, or find the running one, and read what it is from its env
# file.
stack_start() {
	trap stack_stop EXIT
	trap 'exit 130' INT TERM
	local env_file
	case $STACK in
	own)
		if ! command -v redis-server >/dev/null || [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then
			log "installing redis-server and PostgreSQL 15 (make deps)"
			make -s deps
		fi
		log "starting acv dev in $WORK/stack (log: $WORK/acv-dev.log)"
		# Free ports for every listener: the defaults (8081, 9100) belong to `make run`.
		ACV_ADMIN_ADDR=127.0.0.1:0 "$ACV" dev --dir "$WORK/stack" --addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 >"$WORK/acv-dev.log" 2>&1 &
		DEV_PID=$!
		for _ in $(seq 240); do
			grep -q '^acv is running on ' "$WORK/acv-dev.log" && break
			kill -0 "$DEV_PID" 2>/dev/null || { tail -n 30 "$WORK/acv-dev.log" >&2; die "acv dev exited"; }
			sleep 0.5
		done
		grep -q '^acv is running on ' "$WORK/acv-dev.log" || die "acv dev printed no banner within 120 s"
		env_file=$WORK/stack/env
		;;
	running)
		env_file=${ACV_DEV_ENV:-$ROOT/.acv/env}
		[ -f "$env_file" ] || die "STACK=running uses the stack of make run, which writes $env_file; there is none (start make run, or name its env file with ACV_DEV_ENV)"
		;;
	*) die "STACK must be own or running" ;;
	esac
	# The stack is what its env file says, passwords and all (the banner hides them).
	BASE_URL=$(dev_var "$env_file" ACV_DEV_API_URL)
	[ -n "$BASE_URL" ] || die "$env_file names no ACV_DEV_API_URL: restart make run (an older acv dev wrote it)"
	ACV_REDIS_URL=$(dev_var "$env_file" ACV_REDIS_URL)
	ACV_DATABASE_URL=$(dev_var "$env_file" ACV_DATABASE_URL)
	ACV_MASTER_KEY_FILE=$(dev_var "$env_file" ACV_MASTER_KEY_FILE)
	[ -n "$ACV_REDIS_URL" ] && [ -n "$ACV_DATABASE_URL" ] && [ -n "$ACV_MASTER_KEY_FILE" ] ||
		die "$env_file lacks ACV_REDIS_URL, ACV_DATABASE_URL or ACV_MASTER_KEY_FILE"
	unset ACV_MASTER_KEY
	export ACV_REDIS_URL ACV_DATABASE_URL ACV_MASTER_KEY_FILE
	# The acv commands below (codes generate, export) go through the console's admin API.
	ACV_ADMIN_URL=$(dev_var "$env_file" ACV_ADMIN_URL)
	ACV_ADMIN_TOKEN=$(dev_var "$env_file" ACV_ADMIN_TOKEN)
	[ -n "$ACV_ADMIN_URL" ] && [ -n "$ACV_ADMIN_TOKEN" ] ||
		die "$env_file lacks ACV_ADMIN_URL or ACV_ADMIN_TOKEN (the acv command's login): restart make run"
	export ACV_ADMIN_URL ACV_ADMIN_TOKEN
	local prom
	prom=$(dev_var "$env_file" ACV_DEV_PROMETHEUS_URL)
	if [ -n "$prom" ] && curl -fsS -m 2 "$prom/-/ready" >/dev/null 2>&1; then
		PROM_TARGETS=$(dev_var "$env_file" ACV_DEV_PROMETHEUS_TARGETS)
		log "the stack's Prometheus at $prom scrapes this load test too"
	fi
	case $BASE_URL in
	http://127.0.0.1:* | http://localhost:* | http://\[::1\]:*) ;;
	*) die "BASE_URL $BASE_URL is not on loopback; this script only drives a local stack" ;;
	esac
	local demo_json
	demo_json=$(dirname "$env_file")/demo.json
	[ -f "$demo_json" ] || die "no $demo_json"
	PROJECT_ID=$(json_field "$demo_json" project_id)
	API_KEY=$(json_field "$demo_json" key_id)
	API_SECRET=$(json_field "$demo_json" secret)
	[ -n "$PROJECT_ID" ] && [ -n "$API_KEY" ] && [ -n "$API_SECRET" ] || die "cannot read project_id, key_id, secret from $demo_json"
	curl -fsS -m 5 "$BASE_URL/healthz" 2>/dev/null | grep -q '"status"' ||
		die "$BASE_URL/healthz (ACV_DEV_API_URL of $env_file) does not answer as acv does: is the stack still running?"
	log "acv at $BASE_URL, project $PROJECT_ID, key $API_KEY"
}

# stack_codes: one batch of codes per scenario, told apart by prefix, so no scenario uses
# another's codes, exported to CODES_FILE. The readmix batch's prefix holds characters that
# must be percent-encoded in a path and a query ('/', '+', '%', '?', '#', '&', '=', a space, a
# non-ASCII letter) and LIKE wildcards.
stack_codes() {
	local run
	run=$(date +%s)
	P_REDEEM="LTR$run-"
	P_CONT="LTC$run-"
	P_REACT="LTA$run-"
	local p_odd="lt $run a+b/c%d_e?f#g&h=ü-"
	gen() { "$ACV" codes generate --project "$PROJECT_ID" --count "$1" --length 10 --prefix "$2" >/dev/null 2>>"$WORK/admin.log"; }
	want() { printf '%s\n' "${SCENARIOS[@]}" | grep -qx "$1"; }
	log "generating codes"
	if want redeem; then gen $((REDEEM_RATE * SECS + REDEEM_RATE * SECS / 10 + 10)) "$P_REDEEM"; fi
	if want contention; then gen "$CONTENTION_CODES" "$P_CONT"; fi
	if want reactivate; then gen $((REACTIVATE_VUS * REACTIVATE_PER_VU)) "$P_REACT"; fi
	if want readmix; then gen 200 "$p_odd"; fi
	CODES_FILE=$WORK/codes.csv
	"$ACV" codes export --project "$PROJECT_ID" "$CODES_FILE" 2>>"$WORK/admin.log"
	log "exported $(($(wc -l <"$CODES_FILE") - 1)) codes to $CODES_FILE"
}
