// Command acvload drives signed verify requests at a running acv and reports throughput and
// latency percentiles.
//
//	acv codes export --project P -o codes.csv
//	acvload -base http://127.0.0.1:8080 -key K -secret S -project P -codes codes.csv -c 64 -d 10s
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/acv/acv/loadtest/loadgen"
)

func main() {
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

func readCodes(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open codes: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	var out []string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read codes: %w", err)
		}
		if len(rec) > 2 && rec[2] == "unused" {
			out = append(out, rec[1])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no unused codes in %s", path)
	}
	return out, nil
}
