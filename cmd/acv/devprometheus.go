package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/acv/acv/internal/localenv"
)

// Scrape jobs of acv dev's Prometheus. The dev process is scraped under the job name of the
// deployment's API replicas, so the rules and the dashboard, which select on it, see it as they
// see production. Load generators (acvload) register in a targets directory
// (localenv.RegisterScrapeTarget) under a job of their own, which the instance-down alert
// (job=~"acv-.*") leaves alone: a finished load test is not an outage.
const (
	devJobAPI  = "acv-api"
	devJobLoad = "acvload"
)

// devPrometheusSetup is what acv dev takes from the deployment's Prometheus configuration: its
// intervals and rule files, so the local Prometheus evaluates the rules a deployment runs.
type devPrometheusSetup struct {
	global    map[string]any
	ruleFiles []string
	rules     int
}

// readDeployPrometheus reads the deployment's Prometheus configuration at path and resolves its
// rule_files as Prometheus does, relative to the configuration's directory; each entry (a glob)
// must match a file. It is read on every start: the rules have one home, which may move.
func readDeployPrometheus(path string) (devPrometheusSetup, error) {
	s := devPrometheusSetup{global: map[string]any{"external_labels": map[string]string{"stack": "acv-dev"}}}
	var deploy struct {
		Global        map[string]any   `yaml:"global"`
		RuleFiles     []string         `yaml:"rule_files"`
		ScrapeConfigs []map[string]any `yaml:"scrape_configs"`
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		err = readYAML(abs, &deploy)
	}
	if err != nil {
		return s, fmt.Errorf("the deployment's Prometheus configuration (run acv dev from the repository's root, or name it with --prometheus-config): %w", err)
	}
	if len(deploy.RuleFiles) == 0 {
		return s, fmt.Errorf("%s names no rule_files", path)
	}
	for _, k := range []string{"scrape_interval", "scrape_timeout", "evaluation_interval"} {
		if v, ok := deploy.Global[k].(string); ok && v != "" {
			s.global[k] = v
		}
	}
	for _, pattern := range deploy.RuleFiles {
		p := pattern
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(abs), p)
		}
		files, err := filepath.Glob(p)
		if err != nil || len(files) == 0 {
			return s, fmt.Errorf("%s: rule_files entry %q matches no file (looked for %s)", path, pattern, p)
		}
		for _, f := range files {
			var rules struct {
				Groups []struct {
					Rules []map[string]any `yaml:"rules"`
				} `yaml:"groups"`
			}
			if err := readYAML(f, &rules); err != nil {
				return s, fmt.Errorf("read rules: %w", err)
			}
			for _, g := range rules.Groups {
				s.rules += len(g.Rules)
			}
			s.ruleFiles = append(s.ruleFiles, f)
		}
	}
	if !slices.ContainsFunc(deploy.ScrapeConfigs, func(j map[string]any) bool { return j["job_name"] == devJobAPI }) {
		slog.Warn("the deployment's Prometheus has no scrape job of this name; the rules may select on another", "job", devJobAPI, "config", path)
	}
	return s, nil
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err == nil {
		err = yaml.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// devPrometheus is the Prometheus acv dev runs with --prometheus.
type devPrometheus struct {
	*localenv.Prometheus
	// TargetsDir is where load generators register their metrics listeners.
	TargetsDir string
	setup      devPrometheusSetup
}

// startDevPrometheus starts the machine's Prometheus in dir/prometheus, scraping metricsAddr and
// evaluating the rules of the deployment's configuration deployConfig.
func startDevPrometheus(dir, deployConfig, asked, metricsAddr string, ports *devPorts) (*devPrometheus, error) {
	setup, err := readDeployPrometheus(deployConfig)
	if err != nil {
		return nil, err
	}
	if _, err := localenv.PrometheusBinary(); err != nil {
		return nil, fmt.Errorf("--prometheus: %w; `make run PROMETHEUS=1` installs it", err)
	}
	home := filepath.Join(dir, "prometheus")
	targets := filepath.Join(home, "targets")
	if err := os.MkdirAll(targets, 0o755); err != nil {
		return nil, err
	}
	// A load generator killed before it removed its target would show as a target down.
	localenv.PruneScrapeTargets(targets)
	addr, err := ports.pick("prometheus", asked, devPrometheusAddr)
	if err != nil {
		return nil, err
	}
	static := func(job, target string) map[string]any {
		return map[string]any{"job_name": job, "static_configs": []any{map[string]any{"targets": []string{target}}}}
	}
	p, err := localenv.StartPrometheus(home, localenv.PrometheusOptions{Addr: addr, Config: func(addr string) ([]byte, error) {
		return json.MarshalIndent(map[string]any{
			"global":     setup.global,
			"rule_files": setup.ruleFiles,
			"scrape_configs": []any{
				static(devJobAPI, metricsAddr),
				map[string]any{"job_name": devJobLoad, "file_sd_configs": []any{map[string]any{
					"files": []string{filepath.Join(targets, "*.json")}, "refresh_interval": "5s"}}},
				static("prometheus", addr),
			},
		}, "", "  ")
	}})
	if err != nil {
		return nil, fmt.Errorf("start prometheus: %w", err)
	}
	if err := ports.remember("prometheus", p.Addr); err != nil {
		slog.Warn("prometheus address not remembered", "err", err)
	}
	return &devPrometheus{Prometheus: p, TargetsDir: targets, setup: setup}, nil
}

// describe is the banner's account of what the Prometheus evaluates, relative to the working
// directory where it can be.
func (p *devPrometheus) describe() string {
	wd, _ := os.Getwd()
	files := slices.Clone(p.setup.ruleFiles)
	for i, f := range files {
		if rel, err := filepath.Rel(wd, f); err == nil && !strings.HasPrefix(rel, "..") {
			files[i] = rel
		}
	}
	return fmt.Sprintf("%d rules of %s", p.setup.rules, strings.Join(files, ", "))
}
