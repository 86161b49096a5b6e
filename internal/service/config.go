// Package service wires the replicas' parts — Redis, Postgres, Kafka, the HTTP API, the outbox
// relay and the log consumer — from one Config. cmd/acv runs it; the end-to-end tests run
// several of its parts side by side against real servers.
package service

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/store"
	"go.opentelemetry.io/otel/trace"
)

// Config is the whole configuration, read from the environment by FromEnv.
type Config struct {
	HTTPAddr string
	// DebugAddr is where /metrics, /healthz, /readyz and the profiles are served
	// (ACV_DEBUG_ADDR); empty serves none. DebugListener, when set, is used instead (acv dev
	// opens it first, so it can print the address and fall back to a free port).
	DebugAddr      string
	DebugListener  net.Listener
	RedisURL       string
	DatabaseURL    string
	KafkaBrokers   []string
	KafkaTopic     string
	Partitions     int
	ConsumerGroup  string
	Instance       string
	Roles          Roles
	KeyCacheTTL    time.Duration
	RequestTimeout time.Duration
	Drain          time.Duration
	TrustedProxies []string
	RedisPoolSize  int
	// RedisCoalesce is how many senders share concurrent hot-path calls in pipelines; 0 sends
	// each call on its own.
	RedisCoalesce int
	// RedisWaitReplicas, when above 0, makes every hot-path write wait (WAIT) until that many
	// Redis replicas hold it, for at most RedisWaitTimeout; a shortfall is answered 503.
	RedisWaitReplicas int
	RedisWaitTimeout  time.Duration
	PGMaxConns        int
	Logger            *slog.Logger
	// Tracer makes the spans of every part; none when nil.
	Tracer trace.TracerProvider
	// MasterKeys seal and open the API keys' secrets (ACV_MASTER_KEY or ACV_MASTER_KEY_FILE);
	// the API role and the admin commands need them, the pipeline does not.
	MasterKeys *secrets.Keyring

	// RelayLease is how long a relay holds its share of the outboxes without renewing it, and
	// so how long a dead relay's outboxes wait before the other relays take them over
	// (ACV_RELAY_LEASE). Zero takes the relay's default (5s).
	RelayLease time.Duration

	// KafkaSessionTimeout is how long the group coordinator waits for a consumer that stopped
	// heartbeating (a killed process) before it gives that consumer's partitions to the others
	// (ACV_KAFKA_SESSION_TIMEOUT); the consumer then heartbeats every third of it, at most every
	// 3s. Zero takes kafka-go's 30s.
	KafkaSessionTimeout time.Duration
	// LogRetentionDays is how many days of verification logs the relay and consumer processes
	// keep (whole day partitions past it are dropped); 0 keeps every day.
	LogRetentionDays int

	// Pipeline is how the relay delivers log events: PipelineKafka (to KafkaBrokers, written to
	// PostgreSQL by the consumer role) or PipelineDirect (straight into PostgreSQL, no consumer).
	// Empty picks kafka when KafkaBrokers is set, else direct (see UsesKafka).
	Pipeline string

	// AdminAddr is where the operator console (internal/console) listens when the process
	// has the API role (ACV_ADMIN_ADDR); empty runs no console. AdminListener, when set, is
	// used instead (tests serve on :0). AdminTrustedProxies are the proxies whose forwarding
	// headers the console believes (ACV_ADMIN_TRUSTED_PROXIES).
	AdminAddr           string
	AdminListener       net.Listener
	AdminTrustedProxies []string
	// KeyUseFlush is how often an API process writes when its keys were last used to
	// PostgreSQL (httpapi.KeyUses); 10 s when 0.
	KeyUseFlush time.Duration
	// AdminAuditRetentionDays is how many days of the admin audit log the console keeps
	// (ACV_ADMIN_AUDIT_RETENTION); each console process applies it hourly. 0 keeps every row.
	AdminAuditRetentionDays int

	// Hooks inject faults in tests; production leaves them zero.
	Hooks Hooks
}

// Roles selects which parts a process runs; a deployment may split them.
type Roles struct {
	API, Relay, Consumer bool
}

// Validate reports the first missing or inconsistent setting.
func (c Config) Validate() error {
	switch {
	case c.RedisURL == "":
		return errors.New("ACV_REDIS_URL is required")
	case c.DatabaseURL == "":
		return errors.New("ACV_DATABASE_URL is required")
	case c.Pipeline != "" && c.Pipeline != PipelineKafka && c.Pipeline != PipelineDirect:
		return fmt.Errorf("ACV_PIPELINE: unknown pipeline %q (kafka or direct)", c.Pipeline)
	case c.UsesKafka() && (c.Roles.Relay || c.Roles.Consumer) && len(c.KafkaBrokers) == 0:
		return errors.New("KAFKA_BROKERS is required for the relay and consumer roles of the kafka pipeline")
	case !c.UsesKafka() && c.Roles.Consumer && !c.Roles.API && !c.Roles.Relay:
		return errors.New("a consumer-only process needs the kafka pipeline (KAFKA_BROKERS): in the direct pipeline the relay writes the logs itself")
	case c.KafkaSessionTimeout < 0:
		return errors.New("ACV_KAFKA_SESSION_TIMEOUT must not be negative")
	case !c.Roles.API && !c.Roles.Relay && !c.Roles.Consumer:
		return errors.New("ACV_ROLES names no role (api, relay, consumer)")
	case c.Roles.API && c.MasterKeys == nil:
		return errMasterKeyRequired
	}
	return nil
}

// The pipelines the relay can deliver log events through (ACV_PIPELINE).
const (
	// PipelineKafka: relay → Kafka (acks=all) → consumer role → PostgreSQL.
	PipelineKafka = "kafka"
	// PipelineDirect: relay → PostgreSQL (one transaction per batch); the consumer role is
	// skipped. An outbox entry is removed only after PostgreSQL committed its event.
	PipelineDirect = "direct"
)

// UsesKafka tells whether the log events go through Kafka: ACV_PIPELINE=kafka, or
// ACV_PIPELINE unset and KAFKA_BROKERS set. Otherwise the relay writes them to PostgreSQL
// itself, the consumer role has nothing to do, and neither readiness nor metrics ask Kafka.
func (c Config) UsesKafka() bool {
	return c.Pipeline == PipelineKafka || c.Pipeline == "" && len(c.KafkaBrokers) > 0
}

// Setting documents one environment variable; a test holds README's table to the same list.
type Setting struct {
	Name, Default, Meaning string
}

// Settings lists every environment variable the service reads.
var Settings = []Setting{
	{"ACV_HTTP_ADDR", "127.0.0.1:8080", "address the API listens on"},
	{"ACV_REDIS_URL", "", "Redis URL, e.g. redis://127.0.0.1:6379/0; a Redis Cluster: redis-cluster://host1:port1?addr=host2:port2&addr=host3:port3 (any nodes, the others are discovered; rediss-cluster:// with TLS)"},
	{"ACV_DATABASE_URL", "", "PostgreSQL URL, e.g. postgres://acv@127.0.0.1:5432/acv"},
	{"KAFKA_BROKERS", "", "comma-separated Kafka bootstrap addresses"},
	{"ACV_PIPELINE", "", "how the relay delivers log events: kafka (to KAFKA_BROKERS; the consumer role writes PostgreSQL) or direct (the relay writes PostgreSQL itself, the consumer role is skipped); unset: kafka when KAFKA_BROKERS is set, else direct"},
	{"ACV_KAFKA_TOPIC", audit.Topic, "topic of the verification-log events"},
	{"ACV_KAFKA_PARTITIONS", "8", "partitions when the topic is created"},
	{"ACV_CONSUMER_GROUP", "acv-log-writer", "Kafka consumer group of the log writers"},
	{"ACV_KAFKA_SESSION_TIMEOUT", "30s", "how long Kafka waits for a silent log writer (a killed process) before its partitions go to the other members of the group; its logs wait in Kafka that long. Heartbeats go every third of it (at most 3s). The brokers must allow it: group.min.session.timeout.ms and group.max.session.timeout.ms, 6s to 30m by default"},
	{"ACV_ROLES", "api,relay,consumer", "parts this process runs"},
	{"ACV_INSTANCE", "host name", "this replica's name (relay consumer name)"},
	{"ACV_KEY_CACHE_TTL", "1s", "how long an API-key lookup is reused: a revocation or a project disable reaches every replica within it"},
	{"ACV_REQUEST_TIMEOUT", "10s", "bound on one request's work"},
	{"ACV_SHUTDOWN_DRAIN", "15s", "how long shutdown waits for in-flight requests"},
	{"ACV_DEBUG_ADDR", "", "address serving /metrics and /debug/pprof (off when empty)"},
	{"ACV_TRUSTED_PROXIES", "", "comma-separated proxy CIDRs whose X-Forwarded-For is believed"},
	{"ACV_MASTER_KEY", "", "master key(s) sealing the API keys' secrets at rest: 64 hex characters, or comma-separated kid:hex entries, the first sealing and the others only opening (rotation); required by the api role and the admin commands"},
	{"ACV_MASTER_KEY_FILE", "", "file holding the master key(s) instead, one kid:hex (or hex) a line, the first line sealing; # starts a comment"},
	{"ACV_REDIS_POOL_SIZE", "256", "Redis connections per process (on a cluster: per node); "},
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
	{"OTEL_TRACES_EXPORTER", "", "trace exporter (otlp, console, none)"},
	{"OTEL_SERVICE_NAME", "acv", "service name on every span"},
}

// FromEnv reads the configuration from the environment, with the defaults of Settings.
func FromEnv() (Config, error) {
	get := func(name string) string {
		if v, ok := os.LookupEnv(name); ok {
			return strings.TrimSpace(v)
		}
		for _, s := range Settings {
			if s.Name == name {
				return s.Default
			}
		}
		return ""
	}
	var errs []error
	dur := func(name string) time.Duration {
		d, err := time.ParseDuration(get(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return d
	}
	num := func(name string) int {
		n, err := strconv.Atoi(get(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return n
	}
	c := Config{
		HTTPAddr:       get("ACV_HTTP_ADDR"),
		DebugAddr:      get("ACV_DEBUG_ADDR"),
		RedisURL:       get("ACV_REDIS_URL"),
		DatabaseURL:    get("ACV_DATABASE_URL"),
		KafkaBrokers:   list(get("KAFKA_BROKERS")),
		Pipeline:       get("ACV_PIPELINE"),
		KafkaTopic:     get("ACV_KAFKA_TOPIC"),
		Partitions:     num("ACV_KAFKA_PARTITIONS"),
		ConsumerGroup:  get("ACV_CONSUMER_GROUP"),
		Instance:       os.Getenv("ACV_INSTANCE"),
		KeyCacheTTL:    dur("ACV_KEY_CACHE_TTL"),
		RequestTimeout: dur("ACV_REQUEST_TIMEOUT"),
		Drain:          dur("ACV_SHUTDOWN_DRAIN"),
		TrustedProxies: list(get("ACV_TRUSTED_PROXIES")),
		RedisPoolSize:  num("ACV_REDIS_POOL_SIZE"),
		RedisCoalesce:  num("ACV_REDIS_COALESCE"),

		RedisWaitReplicas: num("ACV_REDIS_WAIT_REPLICAS"),
		RedisWaitTimeout:  dur("ACV_REDIS_WAIT_TIMEOUT"),
		PGMaxConns:        num("ACV_PG_MAX_CONNS"),

		RelayLease: dur("ACV_RELAY_LEASE"),

		KafkaSessionTimeout: dur("ACV_KAFKA_SESSION_TIMEOUT"),

		AdminAddr:           get("ACV_ADMIN_ADDR"),
		AdminTrustedProxies: list(get("ACV_ADMIN_TRUSTED_PROXIES")),
	}
	auditKeep := get("ACV_ADMIN_AUDIT_RETENTION")
	if auditKeep == "" {
		auditKeep = strconv.Itoa(int(console.DefaultAuditRetention / (24 * time.Hour)))
	}
	if days, err := parseDays("ACV_ADMIN_AUDIT_RETENTION", auditKeep); err != nil {
		errs = append(errs, err)
	} else {
		c.AdminAuditRetentionDays = days
	}
	retention := get(LogRetentionEnv)
	if retention == "" {
		retention = strconv.Itoa(store.DefaultLogRetentionDays)
	}
	if days, err := ParseLogRetention(retention); err != nil {
		errs = append(errs, err)
	} else {
		c.LogRetentionDays = days
	}
	for _, r := range list(get("ACV_ROLES")) {
		switch r {
		case "api":
			c.Roles.API = true
		case "relay":
			c.Roles.Relay = true
		case "consumer":
			c.Roles.Consumer = true
		default:
			errs = append(errs, fmt.Errorf("ACV_ROLES: unknown role %q", r))
		}
	}
	if c.Instance == "" {
		c.Instance, _ = os.Hostname()
	}
	var err error
	if c.MasterKeys, err = masterKeysFromEnv(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	return c, nil
}

func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
