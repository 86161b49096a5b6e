package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/settings"
	"github.com/acv/acv/store"
)

type devOptions struct {
	dir, addr, metricsAddr, kafka    string
	prometheus                       bool
	prometheusAddr, prometheusConfig string
}

// The default addresses of acv dev's metrics listener (the compose stack's debug port) and of
// its Prometheus (Prometheus's own default), each used while free.
const (
	devMetricsAddr    = "127.0.0.1:9100"
	devPrometheusAddr = "127.0.0.1:9090"
)

// devTokenTTL is how long acv dev's admin API token lasts; a later start makes a new one when it ends.
const devTokenTTL = 30 * 24 * time.Hour

func devCmd() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole service locally: Redis and PostgreSQL on loopback, a demo project, the API and the relay (logs straight to PostgreSQL, through a local Apache Kafka with --kafka real, or through the Kafka of KAFKA_BROKERS); /metrics on a loopback address of its own, and with --prometheus a local Prometheus with the deployment's rules",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.kafka != "" && o.kafka != "real" {
				return fmt.Errorf("--kafka (ACV_DEV_KAFKA): unknown broker %q (real, or empty for none)", o.kafka)
			}
			return stopped(cmd.Context(), runDev(cmd.Context(), o))
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".acv", "data directory of the local Redis and PostgreSQL")
	// ACV_HTTP_ADDR set empty is its default here too: acv dev listens on loopback.
	cmd.Flags().StringVar(&o.addr, "addr", cmp.Or(settings.Get("ACV_HTTP_ADDR"), settings.Default("ACV_HTTP_ADDR")),
		"API listen address (a free port is picked when busy)")
	cmd.Flags().StringVar(&o.kafka, "kafka", settings.Get("ACV_DEV_KAFKA"),
		"real: run the logs through a one-node Apache Kafka "+localenv.Kafka4+" started on loopback, its storage fresh in <dir>/kafka on every start (needs java and mvn; the jars are fetched once from Maven Central); empty: no broker (default: $ACV_DEV_KAFKA)")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", settings.Get("ACV_DEBUG_ADDR"),
		"address of the debug listener serving /metrics, /healthz, /readyz and /debug/pprof (default: $ACV_DEBUG_ADDR, else "+devMetricsAddr+" or, when that is busy, the address this data directory used before or a free loopback port)")
	cmd.Flags().BoolVar(&o.prometheus, "prometheus", yes(settings.Get("ACV_DEV_PROMETHEUS")),
		"also run the machine's Prometheus (Debian's "+localenv.PrometheusBin+") with the deployment's rules, scraping this process and the load generators that register with it; its data in <dir>/prometheus (default: $ACV_DEV_PROMETHEUS)")
	cmd.Flags().StringVar(&o.prometheusAddr, "prometheus-addr", settings.Get("ACV_DEV_PROMETHEUS_ADDR"),
		"address of that Prometheus (default: $ACV_DEV_PROMETHEUS_ADDR, else "+devPrometheusAddr+" or, when that is busy, the address this data directory used before or a free loopback port)")
	cmd.Flags().StringVar(&o.prometheusConfig, "prometheus-config", "deploy/prometheus/prometheus.yml",
		"the deployment's Prometheus configuration, whose rule_files (relative to it) that Prometheus evaluates")
	return cmd
}

func yes(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func runDev(ctx context.Context, o devOptions) error {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	// One acv dev per data directory; holding the lock, the servers may stop what a previous
	// run that died (kill -9) left running on it.
	release, err := localenv.LockDir(dir)
	if err != nil {
		return err
	}
	defer release()
	// The postgres server runs as the postgres user when we are root and must reach its directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	// appendfsync always: with everysec, a Redis on a busy disk answers writes it has not yet
	// written, so even a killed Redis process loses verifies it acknowledged. Each server asks
	// for a password of the data directory's own (0600): any user of the machine reaches loopback.
	redisPassword, err := localenv.PasswordFile(filepath.Join(dir, "redis.password"))
	if err != nil {
		return err
	}
	rds, err := localenv.StartRedis(filepath.Join(dir, "redis"), localenv.RedisOptions{AOF: true, FsyncAlways: true, Password: redisPassword})
	if err != nil {
		return err
	}
	defer rds.Stop(10 * time.Second)
	pgDir, err := localenv.PostgresDataDir(dir)
	if err != nil {
		return err
	}
	pgPassword, err := localenv.PasswordFile(filepath.Join(dir, "pg.password"))
	if err != nil {
		return err
	}
	pg, err := localenv.StartPostgres(ctx, pgDir, localenv.PostgresOptions{Password: pgPassword})
	if err != nil {
		return err
	}
	defer pg.Stop()
	if err := pg.CreateDatabase(ctx, "acv"); err != nil {
		return err
	}
	cfg, err := service.FromEnv()
	if err != nil {
		return err
	}
	// The data directory's own master key seals its API-key secrets; ACV_MASTER_KEY* are not used.
	keyFile := filepath.Join(dir, "master.key")
	if cfg.MasterKeys, err = devMasterKeys(keyFile); err != nil {
		return err
	}
	cfg.RedisURL, cfg.DatabaseURL = rds.URL(), pg.URL("acv")
	kafka := "none: the relay writes the logs to PostgreSQL"
	if o.kafka == "real" {
		if len(cfg.KafkaBrokers) > 0 {
			return errors.New("--kafka real starts a broker of its own: unset KAFKA_BROKERS, or drop --kafka (ACV_DEV_KAFKA) to use that Kafka")
		}
		// A new cluster on every start: the outbox keeps only what Kafka had not acknowledged.
		slog.Info("starting Apache Kafka (the jars are fetched from Maven Central on first use)", "version", localenv.Kafka4)
		k, err := localenv.StartKafka(ctx, filepath.Join(dir, "kafka"), localenv.KafkaOptions{Version: localenv.Kafka4})
		if err != nil {
			return fmt.Errorf("start kafka: %w", err)
		}
		defer k.Close() // after the service stopped, before Redis and PostgreSQL
		slog.Info("Apache Kafka started", "version", k.Version, "brokers", k.Brokers, "took", k.Started.Round(time.Millisecond))
		cfg.KafkaBrokers, cfg.Pipeline = k.Brokers, service.PipelineKafka
		kafka = strings.Join(k.Brokers, ",") + " (Apache Kafka " + k.Version + ", fresh storage in " + k.Dir + ")"
	} else if cfg.UsesKafka() {
		kafka = strings.Join(cfg.KafkaBrokers, ",")
	}
	// Without Kafka the relay writes the logs straight to PostgreSQL (the direct pipeline).
	cfg.Roles = service.Roles{API: true, Relay: true, Consumer: cfg.UsesKafka()}
	cfg.Logger = slog.Default()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	d, code, err := prepareDemo(ctx, cfg, filepath.Join(dir, "demo.json"))
	if err != nil {
		return err
	}
	// Every listener keeps its address across restarts while it is free, so the URLs in
	// .acv/env, a bookmark and a dashboard stay valid.
	ports := loadDevPorts(dir)
	ln, err := ports.listen("api", "", o.addr)
	if err != nil {
		return err
	}
	var bootstrap, adminToken string
	if cfg.AdminAddr != "" {
		if cfg.AdminListener, err = ports.listen("console", "", cfg.AdminAddr); err != nil {
			return err
		}
		if bootstrap, adminToken, err = prepareConsole(ctx, cfg, filepath.Join(dir, "admin.token")); err != nil {
			cfg.AdminListener.Close()
			return err
		}
	}
	// /metrics, /healthz, /readyz and the profiles on a loopback listener of their own, never on
	// the API port, as a deployment serves them.
	if cfg.DebugListener, err = ports.listen("metrics", o.metricsAddr, devMetricsAddr); err != nil {
		return err
	}
	metricsURL := "http://" + cfg.DebugListener.Addr().String() + "/metrics"
	var prom *devPrometheus
	if o.prometheus {
		if prom, err = startDevPrometheus(dir, o.prometheusConfig, o.prometheusAddr, cfg.DebugListener.Addr().String(), ports); err != nil {
			return err
		}
		defer prom.Stop(10 * time.Second)
	}
	envFile := filepath.Join(dir, "env")
	apiURL := "http://" + ln.Addr().String()
	vars := [][2]string{
		{"ACV_REDIS_URL", cfg.RedisURL},
		{"ACV_DATABASE_URL", cfg.DatabaseURL},
		{"ACV_MASTER_KEY_FILE", keyFile},
		{"ACV_DEV_API_URL", apiURL},
		{"ACV_DEV_METRICS_URL", metricsURL},
		{"ACV_DEV_CONSOLE_URL", consoleURL(cfg.AdminListener)},
		{"ACV_DEV_PROJECT_ID", d.ProjectID},
		{"ACV_DEV_KEY_ID", d.KeyID},
	}
	if prom != nil {
		vars = append(vars, [2]string{"ACV_DEV_PROMETHEUS_URL", prom.URL}, [2]string{"ACV_DEV_PROMETHEUS_TARGETS", prom.TargetsDir})
	}
	if cfg.UsesKafka() {
		vars = append(vars, [2]string{"KAFKA_BROKERS", strings.Join(cfg.KafkaBrokers, ",")})
	} else {
		vars = append(vars, [2]string{"ACV_PIPELINE", service.PipelineDirect})
	}
	if err := writeDevEnv(envFile, vars, strings.TrimSuffix(consoleURL(cfg.AdminListener), "/"), adminToken); err != nil {
		return err
	}
	// The URLs with their passwords are in the env file (0600), not on the terminal.
	fmt.Printf("\nacv is running on %s (Redis %s, PostgreSQL %s, Kafka %s)\n", apiURL, redacted(cfg.RedisURL),
		redacted(cfg.DatabaseURL), kafka)
	fmt.Printf("demo project %s, API key %s (secret in %s)\n", d.ProjectID, d.KeyID, filepath.Join(dir, "demo.json"))
	fmt.Printf("master key in %s; PostgreSQL data in %s\n", keyFile, pgDir)
	fmt.Printf("metrics: %s (Prometheus text format; /healthz, /readyz and /debug/pprof beside it, not on the API port)\n", metricsURL)
	if prom != nil {
		fmt.Printf("Prometheus: %s (scraping this process and load generators that register in %s; %s; alerts at %s/alerts, data in %s)\n",
			prom.URL, prom.TargetsDir, prom.describe(), prom.URL, filepath.Join(prom.Dir, "data"))
	}
	if cfg.AdminListener != nil {
		fmt.Printf("operator console: %s (admin API under %s)\n", consoleURL(cfg.AdminListener), console.APIPrefix)
		if bootstrap != "" {
			fmt.Println(bootstrap)
		}
	}
	fmt.Printf("point the acv command at this stack with: source %s   (then e.g. acv project list; it holds the URLs with their passwords)\n\n", envFile)
	fmt.Println("Verify a demo code (paste into bash):")
	fmt.Println(curlCommand(apiURL, d, code))
	fmt.Println()
	return runTraced(ctx, cfg, ln)
}

func consoleURL(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return "http://" + ln.Addr().String() + "/"
}

// writeDevEnv writes the shell file (`source .acv/env`) that points the acv command at this dev
// stack, with its login to the console's admin API; rewritten on every start as ports may change.
func writeDevEnv(path string, vars [][2]string, adminURL, adminToken string) error {
	var b strings.Builder
	b.WriteString("# acv dev: `source` this file to point the acv command at the running dev stack.\n")
	b.WriteString("unset ACV_MASTER_KEY\n")
	// The acv command that runs this stack, first on PATH (once, however often the file is
	// sourced), so `acv project list` works in the shell that sourced it.
	if exe, err := os.Executable(); err == nil {
		bin := shellQuote(filepath.Dir(exe))
		fmt.Fprintf(&b, "case \":$PATH:\" in *:%s:*) ;; *) export PATH=%s:\"$PATH\" ;; esac\n", bin, bin)
	}
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", v[0], shellQuote(v[1]))
	}
	if adminToken != "" {
		b.WriteString("\n# The acv command's login to the console's admin API: a token of the \"admin\" account\n")
		b.WriteString("# (also in admin.token beside this file), so acv project list and the like work at once.\n")
		fmt.Fprintf(&b, "export ACV_ADMIN_URL=%s\nexport ACV_ADMIN_TOKEN=%s\n", shellQuote(adminURL), shellQuote(adminToken))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// prepareConsole creates an "admin" console account on a stack without any, returning its
// one-time password for the banner, and the acv command's admin API token: the one in tokenFile
// while the server accepts it, else a new one of "admin" ("" when that account is gone or disabled).
func prepareConsole(ctx context.Context, cfg service.Config, tokenFile string) (bootstrap, token string, err error) {
	st, svc, acc, err := firstAccount(ctx, cfg.DatabaseURL, "acv dev", "admin")
	if err != nil {
		return "", "", err
	}
	defer st.Close()
	if acc != nil {
		bootstrap = fmt.Sprintf("console account %q, one-time password %s (shown once; the first login must change it)",
			acc.Username, acc.OneTimePassword)
	}
	if b, err := os.ReadFile(tokenFile); err == nil {
		if _, err := svc.SessionByAPIToken(ctx, strings.TrimSpace(string(b))); err == nil {
			return bootstrap, strings.TrimSpace(string(b)), nil
		}
	}
	adm, err := st.AdminAccountByUsername(ctx, "admin")
	if errors.Is(err, contract.ErrNotFound) || err == nil && adm.Disabled {
		return bootstrap, "", nil
	}
	if err != nil {
		return "", "", err
	}
	t, err := svc.CreateToken(ctx, console.Actor{AdminID: adm.ID, Username: "acv dev", Role: console.Role(adm.Role)},
		"acv dev", "", devTokenTTL)
	if err != nil {
		return "", "", fmt.Errorf("create the dev stack's admin API token: %w", err)
	}
	if err := os.WriteFile(tokenFile, []byte(t.Secret+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", tokenFile, err)
	}
	return bootstrap, t.Secret, nil
}

// demo is what `acv dev` seeds once and keeps, so a restart serves the same project and key.
type demo struct {
	ProjectID string `json:"project_id"`
	KeyID     string `json:"key_id"`
	Secret    string `json:"secret"`
}

// prepareDemo seeds the demo project (once: then read from path), seals unsealed API-key secrets
// (as `acv key rewrap` does), and picks an unused demo code for the banner's request.
func prepareDemo(ctx context.Context, cfg service.Config, path string) (d demo, code string, err error) {
	deps, err := service.Open(ctx, cfg)
	if err != nil {
		return d, "", err
	}
	defer deps.Close()
	a := &admin.Admin{Store: deps.Store, Cache: deps.Cache, Keys: cfg.MasterKeys}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &d); err != nil {
			return d, "", fmt.Errorf("read %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return d, "", err
	} else if d, err = seedDemo(ctx, a, path); err != nil {
		return d, "", err
	}
	res, err := a.RewrapKeys(ctx)
	if err != nil {
		// Keys sealed by a master key this directory no longer has cannot be used; the rest can.
		slog.Warn("some api key secrets of the data directory do not open with its master key", "err", err)
	}
	if res.Sealed+res.Rewrapped > 0 {
		slog.Info("sealed api key secrets", "sealed", res.Sealed, "rewrapped", res.Rewrapped)
	}
	for page := 1; ; page++ {
		rows, _, err := deps.Store.ListCodes(ctx, d.ProjectID, contract.ListQuery{Page: page, PageSize: 100, State: "unused"}, time.Now().Unix())
		if err != nil {
			return d, "", err
		}
		if len(rows) == 0 {
			return d, "", errors.New("every demo code is used: reactivate some or delete the data directory")
		}
		for _, r := range rows {
			// Redis holds the newest state; a code it does not hold is as Postgres lists it.
			live, found, err := deps.Cache.LiveCode(ctx, d.ProjectID, r.Code)
			if err != nil || !found || live.VerifiedAtMs == 0 {
				return d, r.Code, nil
			}
		}
	}
}

func seedDemo(ctx context.Context, a *admin.Admin, path string) (demo, error) {
	p, err := a.CreateProject(ctx, contract.NewProject{Name: "Demo", Description: "Seeded by acv dev"})
	if err != nil {
		return demo{}, err
	}
	k, err := a.CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		return demo{}, err
	}
	if _, err := a.Generate(ctx, p.ID, contract.GenerateSpec{Count: 1000, Length: 10, Prefix: "DEMO-"}, nil); err != nil {
		return demo{}, err
	}
	d := demo{ProjectID: p.ID, KeyID: k.ID, Secret: k.Secret}
	b, _ := json.MarshalIndent(d, "", "  ")
	return d, os.WriteFile(path, b, 0o600)
}

// devMasterKeys reads the master key file, creating it (0600, one random key) on first use; the
// data directory's lock keeps a second acv dev from creating it too.
func devMasterKeys(path string) (*secrets.Keyring, error) {
	// O_EXCL: an existing key is never overwritten, whatever else runs beside this start.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		k, err := secrets.GenerateKey("dev")
		if err == nil {
			_, err = fmt.Fprintf(f, "# acv dev: the master key sealing this data directory's API-key secrets\n%s\n", k.Line())
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("create master key file: %w", err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create master key file: %w", err)
	}
	return secrets.ParseFile(path)
}

// curlCommand prints a request signed with the contract's five-line string, computed by
// openssl in bash, so it works without any SDK.
func curlCommand(base string, d demo, code string) string {
	path := "/api/v1/projects/" + d.ProjectID + "/codes/verify"
	body := fmt.Sprintf(`{"code":"%s","verified_by":"demo"}`, code)
	return strings.Join([]string{
		"KEY=" + d.KeyID + " SECRET=" + d.Secret + " TS=$(date +%s) \\",
		"P=" + path + " BODY='" + body + "'; \\",
		`SIG=$(printf 'POST\n%s\n\n%s\n%s' "$P" "$(printf '%s' "$BODY" | openssl dgst -sha256 -hex | sed 's/^.* //')" "$TS" | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/^.* //'); \`,
		`curl -sS -X POST "` + base + `$P" -H 'Content-Type: application/json' -H "X-API-Key: $KEY" -H "X-Timestamp: $TS" -H "X-Signature: $SIG" -d "$BODY"; echo`,
	}, "\n")
}
