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

	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/settings"
	"github.com/acv/acv/internal/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// Config is the whole configuration, read from the environment by FromEnv. Each field's
// variable and default are in internal/settings.
type Config struct {
	HTTPAddr string
	// DebugAddr is where /metrics, /healthz, /readyz and the profiles are served; empty serves
	// none. DebugListener, when set, is used instead (acv dev opens it first).
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
	// RedisCoalesce, RedisWaitReplicas and RedisWaitTimeout tune the hot path (cache.New).
	RedisCoalesce     int
	RedisWaitReplicas int
	RedisWaitTimeout  time.Duration
	PGMaxConns        int
	Logger            *slog.Logger
	// Tracing is what the OTEL_* variables ask of tracing; cmd/acv makes Tracer from it.
	Tracing telemetry.Tracing
	// Tracer makes the spans of every part; none when nil.
	Tracer trace.TracerProvider
	// MasterKeys seal and open the API keys' secrets; the API role needs them.
	MasterKeys *secrets.Keyring
	// RelayLease and KafkaSessionTimeout take the relay's and kafka-go's defaults when zero.
	RelayLease          time.Duration
	KafkaSessionTimeout time.Duration
	LogRetentionDays    int
	// Pipeline is how the relay delivers log events: PipelineKafka or PipelineDirect; empty
	// picks kafka when KafkaBrokers is set (see UsesKafka).
	Pipeline string
	// AdminAddr is where the operator console listens with the API role; empty runs none.
	// AdminListener, when set, is used instead. AdminTrustedProxies are the proxies whose
	// forwarding headers the console believes.
	AdminAddr           string
	AdminListener       net.Listener
	AdminTrustedProxies []string
	// AdminAuditRetentionDays is how many days of the admin audit log the console keeps; 0
	// keeps every row.
	AdminAuditRetentionDays int
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
// ACV_PIPELINE unset and KAFKA_BROKERS set. Otherwise the relay writes them to PostgreSQL.
func (c Config) UsesKafka() bool {
	return c.Pipeline == PipelineKafka || c.Pipeline == "" && len(c.KafkaBrokers) > 0
}

// FromEnv reads the configuration from the environment (internal/settings, whose Service
// list holds every variable's default).
func FromEnv() (Config, error) {
	get := settings.Get
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
	// A retention set empty keeps its default, as when unset.
	days := func(name string) int {
		v := get(name)
		if v == "" {
			v = settings.Default(name)
		}
		n, err := parseDays(name, v)
		if err != nil {
			errs = append(errs, err)
		}
		return n
	}
	c := Config{
		HTTPAddr:                get("ACV_HTTP_ADDR"),
		DebugAddr:               get("ACV_DEBUG_ADDR"),
		RedisURL:                get("ACV_REDIS_URL"),
		DatabaseURL:             get("ACV_DATABASE_URL"),
		KafkaBrokers:            list(get("KAFKA_BROKERS")),
		Pipeline:                get("ACV_PIPELINE"),
		KafkaTopic:              get("ACV_KAFKA_TOPIC"),
		Partitions:              num("ACV_KAFKA_PARTITIONS"),
		ConsumerGroup:           get("ACV_CONSUMER_GROUP"),
		Instance:                get("ACV_INSTANCE"),
		KeyCacheTTL:             dur("ACV_KEY_CACHE_TTL"),
		RequestTimeout:          dur("ACV_REQUEST_TIMEOUT"),
		Drain:                   dur("ACV_SHUTDOWN_DRAIN"),
		TrustedProxies:          list(get("ACV_TRUSTED_PROXIES")),
		RedisPoolSize:           num("ACV_REDIS_POOL_SIZE"),
		RedisCoalesce:           num("ACV_REDIS_COALESCE"),
		RedisWaitReplicas:       num("ACV_REDIS_WAIT_REPLICAS"),
		RedisWaitTimeout:        dur("ACV_REDIS_WAIT_TIMEOUT"),
		PGMaxConns:              num("ACV_PG_MAX_CONNS"),
		RelayLease:              dur("ACV_RELAY_LEASE"),
		KafkaSessionTimeout:     dur("ACV_KAFKA_SESSION_TIMEOUT"),
		LogRetentionDays:        days(LogRetentionEnv),
		AdminAddr:               get("ACV_ADMIN_ADDR"),
		AdminTrustedProxies:     list(get("ACV_ADMIN_TRUSTED_PROXIES")),
		AdminAuditRetentionDays: days("ACV_ADMIN_AUDIT_RETENTION"),
		Tracing: telemetry.Tracing{
			Exporter:       get("OTEL_TRACES_EXPORTER"),
			Endpoint:       get("OTEL_EXPORTER_OTLP_ENDPOINT"),
			TracesEndpoint: get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
			ServiceName:    get("OTEL_SERVICE_NAME"),
		},
	}
	roles := map[string]*bool{"api": &c.Roles.API, "relay": &c.Roles.Relay, "consumer": &c.Roles.Consumer}
	for _, r := range list(get("ACV_ROLES")) {
		if on, ok := roles[r]; ok {
			*on = true
		} else {
			errs = append(errs, fmt.Errorf("ACV_ROLES: unknown role %q", r))
		}
	}
	if c.Instance == "" {
		c.Instance, _ = os.Hostname()
	}
	var err error
	if c.MasterKeys, err = masterKeys(get("ACV_MASTER_KEY"), get("ACV_MASTER_KEY_FILE")); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
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
