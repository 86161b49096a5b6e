package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

// demo is what `acv dev` seeds once and keeps in its data directory, so a restart serves the
// same project and key.
type demo struct {
	ProjectID string `json:"project_id"`
	KeyID     string `json:"key_id"`
	Secret    string `json:"secret"`
}

func devCmd() *cobra.Command {
	var dir, addr string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole service locally: Redis, PostgreSQL and a Kafka broker on loopback, a demo project, the API, relay and consumer",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), dir, addr)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".acv", "data directory of the local Redis and PostgreSQL")
	cmd.Flags().StringVar(&addr, "addr", envOr("ACV_HTTP_ADDR", "127.0.0.1:8080"), "API listen address (a free port is picked when busy)")
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runDev(ctx context.Context, dir, addr string) error {
	log := slog.Default()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The postgres server runs as the postgres user when we are root and must reach its directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	rds, err := localenv.StartRedis(filepath.Join(dir, "redis"), localenv.RedisOptions{AOF: true})
	if err != nil {
		return err
	}
	defer rds.Stop(10 * time.Second)
	pg, err := localenv.StartPostgres(ctx, filepath.Join(dir, "pg"), localenv.PostgresOptions{})
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
	cfg.RedisURL = "redis://" + rds.Addr + "/0"
	cfg.DatabaseURL = pg.URL("acv")
	cfg.Roles = service.Roles{API: true, Relay: true, Consumer: true}
	cfg.Logger = log
	if len(cfg.KafkaBrokers) == 0 {
		k, err := localenv.StartKafka(cfg.KafkaTopic, cfg.Partitions, 0)
		if err != nil {
			return err
		}
		defer k.Close()
		cfg.KafkaBrokers = k.Brokers
	}
	if err := audit.EnsureTopic(ctx, cfg.KafkaBrokers, cfg.KafkaTopic, cfg.Partitions); err != nil {
		return err
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	d, err := seedDemo(ctx, cfg, filepath.Join(dir, "demo.json"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("address busy; picking a free port", "addr", addr, "err", err)
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
	}
	code, err := unusedDemoCode(ctx, cfg, d)
	if err != nil {
		return err
	}
	fmt.Printf("\nacv is running on http://%s (Redis %s, PostgreSQL %s, Kafka %s)\n", ln.Addr(), rds.Addr,
		cfg.DatabaseURL, strings.Join(cfg.KafkaBrokers, ","))
	fmt.Printf("demo project %s, API key %s (secret in %s)\n\n", d.ProjectID, d.KeyID, filepath.Join(dir, "demo.json"))
	fmt.Println("Verify a demo code (paste into bash):")
	fmt.Println(curlCommand("http://"+ln.Addr().String(), d, code))
	fmt.Println()
	return runTraced(ctx, cfg, ln)
}

func seedDemo(ctx context.Context, cfg service.Config, path string) (demo, error) {
	var d demo
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &d); err != nil {
			return d, fmt.Errorf("read %s: %w", path, err)
		}
		return d, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return d, err
	}
	deps, err := service.Open(ctx, cfg)
	if err != nil {
		return d, err
	}
	defer deps.Close()
	a := &admin.Admin{Store: deps.Store, Cache: deps.Cache}
	p, err := a.CreateProject(ctx, store.NewProject{Name: "Demo", Description: "Seeded by acv dev"})
	if err != nil {
		return d, err
	}
	k, err := deps.Store.CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		return d, err
	}
	if _, err := a.Generate(ctx, p.ID, admin.GenerateSpec{Count: 1000, Length: 10, Prefix: "DEMO-"}, nil); err != nil {
		return d, err
	}
	d = demo{ProjectID: p.ID, KeyID: k.ID, Secret: k.Secret}
	b, _ := json.MarshalIndent(d, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return d, err
	}
	return d, nil
}

func unusedDemoCode(ctx context.Context, cfg service.Config, d demo) (string, error) {
	deps, err := service.Open(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer deps.Close()
	for page := 1; ; page++ {
		rows, _, err := deps.Store.ListCodes(ctx, d.ProjectID, contract.ListQuery{Page: page, PageSize: 100, State: "unused"}, time.Now().Unix())
		if err != nil {
			return "", err
		}
		if len(rows) == 0 {
			return "", errors.New("every demo code is used: reactivate some or delete the data directory")
		}
		for _, r := range rows {
			// Redis holds the newest state; a code it does not hold is as Postgres lists it.
			live, found, err := deps.Cache.LiveCode(ctx, d.ProjectID, r.Code)
			if err != nil || !found || live.VerifiedAtMs == 0 {
				return r.Code, nil
			}
		}
	}
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
