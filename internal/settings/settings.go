// Package settings is where the acv command, acvload and the test kit read their environment:
// every variable has one row here, with its default and meaning, and is read here only, so each
// default is written once. README's configuration table is Service, rendered.
package settings

import (
	"fmt"
	"os"
	"strings"
)

// A Setting is one environment variable: its name, the value a program uses when it is unset
// (empty when there is none), and what it means.
type Setting struct {
	Name, Default, Meaning string
}

// Service lists what `acv serve`, `acv migrate` and `acv logs` read: the service's
// configuration, README's table.
var Service = []Setting{
	{"ACV_HTTP_ADDR", "127.0.0.1:8080", "address the API listens on"},
	{"ACV_REDIS_URL", "", "Redis URL, e.g. redis://127.0.0.1:6379/0; a Redis Cluster as `redis-cluster://host1:port1?addr=host2:port2&addr=host3:port3` (any nodes, the others are discovered; `rediss-cluster://` for TLS; go-redis' `redis://host1:port1?addr=…` form means a cluster too)"},
	{"ACV_DATABASE_URL", "", "PostgreSQL URL, e.g. postgres://acv@127.0.0.1:5432/acv"},
	{"KAFKA_BROKERS", "", "comma-separated Kafka bootstrap addresses"},
	{"ACV_PIPELINE", "", "how the relay delivers log events: kafka (to KAFKA_BROKERS; the consumer role writes PostgreSQL) or direct (the relay writes PostgreSQL itself, the consumer role is skipped); unset: kafka when KAFKA_BROKERS is set, else direct"},
	{"ACV_KAFKA_TOPIC", "acv.verification-logs", "topic of the verification-log events"},
	{"ACV_KAFKA_PARTITIONS", "8", "partitions when the topic is created"},
	{"ACV_CONSUMER_GROUP", "acv-log-writer", "Kafka consumer group of the log writers"},
	{"ACV_KAFKA_SESSION_TIMEOUT", "30s", "how long Kafka waits for a silent log writer (a killed process) before its partitions go to the other members of the group; its logs wait in Kafka that long. Heartbeats go every third of it (at most 3s). The brokers must allow it: group.min.session.timeout.ms and group.max.session.timeout.ms, 6s to 30m by default"},
	{"ACV_ROLES", "api,relay,consumer", "parts this process runs"},
	{"ACV_INSTANCE", "", "this replica's name (relay consumer name); empty: the host name"},
	{"ACV_KEY_CACHE_TTL", "1s", "how long an API-key lookup is reused: a revocation or a project disable reaches every replica within it"},
	{"ACV_REQUEST_TIMEOUT", "10s", "bound on one request's work"},
	{"ACV_SHUTDOWN_DRAIN", "15s", "how long shutdown waits for in-flight requests"},
	{"ACV_DEBUG_ADDR", "", "address serving /metrics and /debug/pprof (off when empty)"},
	{"ACV_TRUSTED_PROXIES", "", "comma-separated proxy CIDRs whose X-Forwarded-For is believed"},
	{"ACV_MASTER_KEY", "", "master key(s) sealing the API keys' secrets at rest: 64 hex characters, or comma-separated `kid:hex` entries, the first sealing and the others only opening (rotation); required by the api role"},
	{"ACV_MASTER_KEY_FILE", "", "file holding the master key(s) instead, one `kid:hex` (or hex) a line, the first line sealing; `#` starts a comment"},
	{"ACV_REDIS_POOL_SIZE", "256", "Redis connections per process (on a cluster: per node)"},
	{"ACV_REDIS_COALESCE", "8", "senders that pipeline concurrent hot-path calls together (0: one round trip per call)"},
	{"ACV_REDIS_WAIT_REPLICAS", "0", "Redis replicas that must hold a verify or reactivate before it is answered (WAIT); 0 answers once the master applied it"},
	{"ACV_REDIS_WAIT_TIMEOUT", "100ms", "how long a write waits for those replicas; a shortfall is answered 503"},
	{"ACV_PG_MAX_CONNS", "32", "Postgres connections per process"},
	{"ACV_RELAY_LEASE", "5s", "how long a relay holds its share of the outboxes without renewing it (it renews every third of it): a dead relay's outboxes pass to the other relays after that"},
	{"ACV_LOG_RETENTION", "400", "days of verification logs kept: the relay and consumer processes (hourly) and acv logs maintain drop the day partitions of verification_logs wholly older than that; 400d is accepted too; 0 keeps every day"},
	{"ACV_ADMIN_ADDR", "127.0.0.1:8081", "address the operator console's admin API listens on, in processes with the api role; loopback by default (put a TLS proxy in front to reach it from elsewhere); empty runs no console"},
	{"ACV_ADMIN_TRUSTED_PROXIES", "", "comma-separated proxy CIDRs whose X-Forwarded-For (the client IP in the admin audit log) and X-Forwarded-Proto (Secure session cookies) the console believes"},
	{"ACV_ADMIN_AUDIT_RETENTION", "400", "days of the admin audit log kept: each console process removes older rows hourly (the hash chain's anchor moves with them, so the rest still verifies) and records the removal; 400d is accepted too; 0 keeps every row"},
	{"ACV_LOG_LEVEL", "info", "debug, info, warn or error; at info the access log has a line per refused or failed request (4xx, 5xx), at debug one per request"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "", "OTLP endpoint traces are exported to; with OTEL_TRACES_EXPORTER and the other standard OTEL_* variables, traces are exported only when one is set"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "OTLP endpoint for traces only, in place of OTEL_EXPORTER_OTLP_ENDPOINT"},
	{"OTEL_TRACES_EXPORTER", "", "trace exporter (otlp, console, none)"},
	{"OTEL_SERVICE_NAME", "acv", "service name on every span"},
	{"GOGC", "400", "the Go collector's target percentage; 400, not Go's 100, as the service's live heap is small: the collector takes less of a verify's CPU for a little memory; `off` or another number is the Go runtime's"},
	{"GOMEMLIMIT", "120MiB", "the Go runtime's soft memory limit, which keeps the process within its memory budget whatever GOGC lets the heap grow to; another value (e.g. 1GiB, or off) is the Go runtime's"},
}

// Dev lists what `acv dev` reads beside Service (whose ACV_HTTP_ADDR and ACV_DEBUG_ADDR are
// its --addr and --metrics-addr defaults).
var Dev = []Setting{
	{"ACV_DEV_KAFKA", "", "--kafka: real runs the logs through a one-node Apache Kafka started on loopback; empty: no broker"},
	{"ACV_DEV_PROMETHEUS", "", "--prometheus: 1, true, yes or on also runs the machine's Prometheus with the deployment's rules"},
	{"ACV_DEV_PROMETHEUS_ADDR", "", "--prometheus-addr: that Prometheus's address; empty: Prometheus's own default address while free, else the address the data directory used before or a free loopback port"},
	{"ACV_KAFKA_CACHE", "", "where the Apache Kafka jars are kept once fetched, a directory per release; empty: acv in the user's cache directory ($XDG_CACHE_HOME, else ~/.cache)"},
	{"JAVA_HOME", "", "the JDK whose bin/java runs Apache Kafka; empty: the java of the PATH"},
}

// Test lists what the test kit (internal/testkit) reads beside Dev's ACV_KAFKA_CACHE and
// JAVA_HOME.
var Test = []Setting{
	{"ACV_TEST_REDIS", "", "cluster runs every test's stack on a Redis Cluster instead of one redis-server"},
	{"ACV_KAFKA_VERSIONS", "", "comma-separated Apache Kafka releases the suites run against; empty: every supported line's newest"},
	{"ACV_TEST_TIMINGS", "", "file each test binary appends its reported figures to (`make test` prints it at the end); empty: none"},
}

// CLI lists what the acv command reads to reach the admin API (project, key, codes, token and
// admin commands); without them it uses what acv login stored.
var CLI = []Setting{
	{"ACV_ADMIN_URL", "", "the admin API's address for the acv command, e.g. http://127.0.0.1:8081 (the console's); overrides acv login's"},
	{"ACV_ADMIN_TOKEN", "", "the admin API token the acv command sends (acv token create); overrides acv login's"},
}

// Load lists what acvload reads (loadtest/README.md): the stack it drives, then the scenarios'
// settings, whose defaults are the load generator's own because several differ by scenario.
var Load = append([]Setting{
	{"BASE_URL", "", "acvload: the service's base URL"},
	{"API_KEY", "", "acvload: the API key id"},
	{"API_SECRET", "", "acvload: the API key's secret, kept off the command line"},
	{"PROJECT_ID", "", "acvload: the key's project"},
	{"CODES_FILE", "", "acvload: an export of acv codes export"},
	{"ACV_DEV_PROMETHEUS_TARGETS", "", "acvload: the file_sd directory of acv dev's Prometheus"},
}, scenarioRows()...)

// scenarioRows are the load scenarios' settings: the shared ones, then each scenario's own.
func scenarioRows() []Setting {
	var rows []Setting
	add := func(name string) { rows = append(rows, Setting{Name: name, Meaning: "a load scenario's setting"}) }
	for _, n := range []string{"DURATION", "HTTP_TIMEOUT", "MAX_DROPPED_RATE", "P95_MS", "P99_MS", "MAX_FAILED_RATE",
		"MIN_CHECKS_RATE", "AUDIT_SAMPLE", "AUDIT_WAIT_SECS", "CONTENTION_CODES", "ATTEMPTS", "VERIFY_SECS",
		"REACTIVATE_SECS", "ROUNDS", "REACTIVATE_PER_VU", "READBACK", "MIX"} {
		add(n)
	}
	for _, sc := range []string{"REDEEM", "CONTENTION", "REACTIVATE", "READMIX"} {
		for _, n := range []string{"_RATE", "_VUS", "_MAX_VUS", "_PREFIX"} {
			add(sc + n)
		}
	}
	return rows
}

// all is every list: a name is read only if it has a row in one of them.
var all = [][]Setting{Service, Dev, Test, CLI, Load}

// row returns name's row; a name without one is a programming error, so it panics.
func row(name string) Setting {
	for _, l := range all {
		for _, s := range l {
			if s.Name == name {
				return s
			}
		}
	}
	panic(fmt.Sprintf("settings: %s has no row", name))
}

// Get returns the variable's value with surrounding space trimmed, or its row's default when
// it is unset. A variable set to the empty string is empty (ACV_ADMIN_ADDR= runs no console).
func Get(name string) string {
	s := row(name)
	if v, ok := os.LookupEnv(name); ok {
		return strings.TrimSpace(v)
	}
	return s.Default
}

// Default returns the variable's default, for a setting that takes it also when set empty.
func Default(name string) string {
	return row(name).Default
}
