// Command acvload drives signed requests at a running acv. Without a subcommand it verifies the
// unused codes of an export as fast as it can (or at -rate) and reports throughput and latency
// percentiles:
//
//	acv codes export --project P codes.csv
//	acvload -base http://127.0.0.1:8080 -key K -secret S -project P -codes codes.csv -c 64 -d 10s
//
// `acvload scenario` runs the load test scenarios of loadtest/k6 (redeem, contention,
// reactivate, readmix), ported to Go with their thresholds and checks, serves its own metrics
// on /metrics and prints a table; `make loadtest` runs it (loadtest/run.sh, loadtest/README.md):
//
//	API_SECRET=S acvload scenario -base http://127.0.0.1:8080 -key K -project P -codes codes.csv redeem readmix
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acv/acv/loadtest/loadgen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "scenario" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runScenarios(ctx, os.Args[2:])
		stop()
		os.Exit(code)
	}
	var cfg loadgen.Config
	flag.StringVar(&cfg.BaseURL, "base", "http://127.0.0.1:8080", "service base URL")
	flag.StringVar(&cfg.KeyID, "key", "", "API key id")
	flag.StringVar(&cfg.Secret, "secret", "", "API secret")
	flag.StringVar(&cfg.ProjectID, "project", "", "project id")
	codesFile := flag.String("codes", "", "CSV of codes (acv codes export); unused ones are verified once each")
	flag.IntVar(&cfg.Concurrency, "c", 64, "concurrent connections")
	flag.DurationVar(&cfg.Duration, "d", 10*time.Second, "duration")
	flag.Float64Var(&cfg.Rate, "rate", 0, "target requests per second in total (0: as fast as possible)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: acvload [flags]   (verify the unused codes of an export)\n"+
			"       acvload scenario -h   (the load test scenarios)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	codes, err := readCodes(*codesFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acvload:", err)
		os.Exit(2)
	}
	cfg.Codes = codes
	rep := loadgen.Run(context.Background(), cfg)
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
		return
	}
	fmt.Println(rep)
}

// readCodes is the values of the unused codes of an export.
func readCodes(path string) ([]string, error) {
	codes, err := loadgen.ReadCodesFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range loadgen.SelectCodes(codes, "", "unused") {
		out = append(out, c.Value)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no unused codes in %s", path)
	}
	return out, nil
}
