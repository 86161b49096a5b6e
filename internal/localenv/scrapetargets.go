package localenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RegisterScrapeTarget makes the metrics listener addr of this process known to a Prometheus
// reading dir/*.json (file_sd_configs), as `acv dev --prometheus`'s does, so a load
// generator's run shows beside the service. remove deletes the file; one left by a killed
// process is deleted by the next RegisterScrapeTarget or PruneScrapeTargets.
func RegisterScrapeTarget(dir, name, addr string, labels map[string]string) (remove func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	PruneScrapeTargets(dir)
	me, err := processIdentity(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	pid, start, _ := strings.Cut(me, " ")
	path := filepath.Join(dir, name+"-"+pid+"-"+start+".json")
	if labels == nil {
		labels = map[string]string{}
	}
	b, err := json.Marshal([]map[string]any{{"targets": []string{addr}, "labels": labels}})
	if err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	// Renamed in, so Prometheus never reads half a file; the aside name does not match *.json.
	if err := writeFileAtomic(path, append(b, '\n'), 0o644, nil); err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	return func() { os.Remove(path) }, nil
}

// PruneScrapeTargets deletes the target files in dir (RegisterScrapeTarget's) of processes that
// no longer run, so Prometheus does not keep scraping a load generator that was killed.
func PruneScrapeTargets(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-")
		if len(parts) < 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[len(parts)-2])
		if err != nil {
			continue
		}
		if now, err := processIdentity(pid); err == nil && now == parts[len(parts)-2]+" "+parts[len(parts)-1] {
			continue
		}
		os.Remove(f)
	}
}
