#!/usr/bin/env bash
# Static checks of the deployment files: Prometheus rules (syntax and unit tests), Prometheus
# config, the compose file, the Grafana dashboard and provisioning, the runbook links, and the
# HAProxy config when haproxy is installed. Needs promtool and docker-compose (make deps);
# python3 comes with docker-compose. Exits non-zero when any check fails.
#
#   deploy/check.sh
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
run() {
	local name=$1
	shift
	echo "==> $name"
	if "$@"; then
		echo "    ok"
	else
		echo "    FAILED: $name" >&2
		failed+=("$name")
	fi
}

need() {
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "deploy/check.sh: $1 is not installed ($2)" >&2
		failed+=("$1 missing")
		return 1
	fi
}

RULES=deploy/helm/acv/files/acv.rules.yml
RULE_TESTS=deploy/prometheus/tests/acv.rules.test.yml
PROM_CONFIG=deploy/prometheus/prometheus.yml
DASHBOARD=deploy/helm/acv/files/acv.json
DATASOURCES=deploy/grafana/provisioning/datasources/datasources.yml
RUNBOOKS=deploy/runbooks.md

if need promtool "apt-get install prometheus"; then
	run "promtool check rules" promtool check rules "$RULES"
	run "promtool test rules" promtool test rules "$RULE_TESTS"
	# Rule files are found relative to the config file.
	run "promtool check config" promtool check config "$PROM_CONFIG"
fi

if need docker-compose "apt-get install docker-compose"; then
	run "docker-compose config" docker-compose -f docker-compose.yml config -q
fi

if need python3 "apt-get install python3"; then
	run "dashboard is valid JSON" python3 -m json.tool "$DASHBOARD" /dev/null

	# Every datasource the dashboard names is provisioned, and every panel has queries.
	dashboard_datasources() {
		python3 - "$DASHBOARD" "$DATASOURCES" <<'EOF'
import json, re, sys
dash = json.load(open(sys.argv[1]))
provisioned = set(re.findall(r'^\s*uid:\s*"?([\w.-]+)"?\s*$', open(sys.argv[2]).read(), re.M))
bad = []
def walk(v, where):
    if isinstance(v, dict):
        ds = v.get("datasource")
        if isinstance(ds, dict) and ds.get("type") != "grafana" and ds.get("uid") not in provisioned:
            bad.append(f"{where}: datasource uid {ds.get('uid')!r} is not provisioned in {sys.argv[2]}")
        if v.get("type") not in (None, "row") and "targets" in v and not v["targets"]:
            bad.append(f"{where}: panel {v.get('title')!r} has no queries")
        for k, e in v.items():
            walk(e, f"{where}.{k}")
    elif isinstance(v, list):
        for i, e in enumerate(v):
            walk(e, f"{where}[{i}]")
walk(dash, "dashboard")
for b in bad:
    print("    " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
	}
	run "dashboard datasources provisioned" dashboard_datasources

	# Every alert links to a runbook section that exists, and every section is an alert's.
	runbook_links() {
		python3 - "$RULES" "$RUNBOOKS" <<'EOF'
import re, sys
rules, book = open(sys.argv[1]).read(), open(sys.argv[2]).read()
alerts = re.findall(r'^\s*-\s*alert:\s*(\S+)', rules, re.M)
links = re.findall(r'runbook_url:\s*"?deploy/runbooks\.md#([\w-]+)"?', rules)
def anchor(h):  # GitHub's heading anchors
    return re.sub(r'[^\w\- ]', '', h.strip().lower()).replace(' ', '-')
anchors = {anchor(h) for h in re.findall(r'^#{1,6}\s+(.+)$', book, re.M)}
bad = []
if len(links) != len(alerts):
    bad.append(f"{len(alerts)} alerts but {len(links)} runbook_url annotations")
for a in alerts:
    if a.lower() not in links:
        bad.append(f"alert {a} does not link to deploy/runbooks.md#{a.lower()}")
for l in links:
    if l not in anchors:
        bad.append(f"runbook anchor #{l} has no section in {sys.argv[2]}")
for b in bad:
    print("    " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
	}
	run "runbook links" runbook_links
fi

if command -v haproxy >/dev/null 2>&1; then
	# The replicas' names resolve only inside the compose network; that warning is expected.
	run "haproxy config" haproxy -c -q -f deploy/haproxy/haproxy.cfg
else
	echo "==> haproxy config: skipped (haproxy not installed)"
fi

if ((${#failed[@]})); then
	echo "deploy/check.sh: ${#failed[@]} check(s) failed: ${failed[*]}" >&2
	exit 1
fi
echo "deploy/check.sh: all checks passed"
