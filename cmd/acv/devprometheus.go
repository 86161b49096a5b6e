package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/acv/acv/internal/localenv"
)

// Scrape jobs of acv dev's Prometheus. The dev process (API and relay in one) is scraped as the
// deployment scrapes its API replicas, so the rules and the dashboard, which select on that job
// name, see it as they see production. Load generators (acvload) register themselves in a
// targets directory (localenv.RegisterScrapeTarget) under a job of their own, which the
// instance-down alert (job=~"acv-.*") leaves alone: a finished load test is not an outage.
const (
	devJobAPI  = "acv-api"
	devJobLoad = "acvload"
)

// deployPrometheusConfig is what acv dev takes from the deployment's Prometheus configuration:
// its intervals and, above all, its rule files, so the local Prometheus evaluates the very rules
// and alerts a deployment runs.
type deployPrometheusConfig struct {
	Global struct {
		ScrapeInterval     string `yaml:"scrape_interval" json:"scrape_interval,omitempty"`
		ScrapeTimeout      string `yaml:"scrape_timeout" json:"scrape_timeout,omitempty"`
		EvaluationInterval string `yaml:"evaluation_interval" json:"evaluation_interval,omitempty"`
	} `yaml:"global"`
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName string `yaml:"job_name"`
	} `yaml:"scrape_configs"`
}

// hasJob tells whether the configuration scrapes a job of that name.
func (c deployPrometheusConfig) hasJob(name string) bool {
	for _, j := range c.ScrapeConfigs {
		if j.JobName == name {
			return true
		}
	}
	return false
}

// devPrometheusSetup is the deployment configuration read for acv dev: the intervals and the
// rule files it names, resolved to the files they match now.
type devPrometheusSetup struct {
	deploy    deployPrometheusConfig
	ruleFiles []string
	rules     int
}

// readDeployPrometheus reads the deployment's Prometheus configuration at path and resolves its
// rule_files as Prometheus does, relative to the configuration's directory; each entry (a glob)
// must match a file. It reads the rule files' location from there on every start: the rules
// have one home, which may move.
func readDeployPrometheus(path string) (devPrometheusSetup, error) {
	var s devPrometheusSetup
	abs, err := filepath.Abs(path)
	if err != nil {
		return s, err
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return s, fmt.Errorf("the deployment's Prometheus configuration (run acv dev from the repository's root, or name it with --prometheus-config): %w", err)
	}
	if err := yaml.Unmarshal(b, &s.deploy); err != nil {
		return s, fmt.Errorf("read %s: %w", path, err)
	}
	if len(s.deploy.RuleFiles) == 0 {
		return s, fmt.Errorf("%s names no rule_files", path)
	}
	for _, pattern := range s.deploy.RuleFiles {
		p := pattern
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(abs), p)
		}
		files, err := filepath.Glob(p)
		if err != nil || len(files) == 0 {
			return s, fmt.Errorf("%s: rule_files entry %q matches no file (looked for %s)", path, pattern, p)
		}
		for _, f := range files {
			n, err := countRules(f)
			if err != nil {
				return s, err
			}
			s.ruleFiles, s.rules = append(s.ruleFiles, f), s.rules+n
		}
	}
	if !s.deploy.hasJob(devJobAPI) {
		slog.Warn("the deployment's Prometheus has no scrape job of this name; the rules may select on another", "job", devJobAPI, "config", path)
	}
	return s, nil
}

// countRules is the number of recording and alerting rules of a Prometheus rule file.
func countRules(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var f struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return 0, fmt.Errorf("read rules %s: %w", path, err)
	}
	n := 0
	for _, g := range f.Groups {
		n += len(g.Rules)
	}
	return n, nil
}

// config renders the configuration of acv dev's Prometheus serving on addr: the deployment's
// intervals and rule files; the dev process's metrics listener; the load generators of
// targetsDir; itself.
func (s devPrometheusSetup) config(addr, metricsAddr, targetsDir string) ([]byte, error) {
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type fileSD struct {
		Files           []string `json:"files"`
		RefreshInterval string   `json:"refresh_interval"`
	}
	type job struct {
		JobName       string   `json:"job_name"`
		StaticConfigs []static `json:"static_configs,omitempty"`
		FileSDConfigs []fileSD `json:"file_sd_configs,omitempty"`
	}
	global := map[string]any{"external_labels": map[string]string{"stack": "acv-dev"}}
	for k, v := range map[string]string{
		"scrape_interval":     s.deploy.Global.ScrapeInterval,
		"scrape_timeout":      s.deploy.Global.ScrapeTimeout,
		"evaluation_interval": s.deploy.Global.EvaluationInterval,
	} {
		if v != "" {
			global[k] = v
		}
	}
	return json.MarshalIndent(map[string]any{
		"global":     global,
		"rule_files": s.ruleFiles,
		"scrape_configs": []job{
			{JobName: devJobAPI, StaticConfigs: []static{{Targets: []string{metricsAddr}}}},
			{JobName: devJobLoad, FileSDConfigs: []fileSD{{Files: []string{filepath.Join(targetsDir, "*.json")}, RefreshInterval: "5s"}}},
			{JobName: "prometheus", StaticConfigs: []static{{Targets: []string{addr}}}},
		},
	}, "", "  ")
}

// devPrometheus is the Prometheus acv dev runs with --prometheus.
type devPrometheus struct {
	*localenv.Prometheus
	// TargetsDir is where load generators register their metrics listeners.
	TargetsDir string
	setup      devPrometheusSetup
}

// startDevPrometheus starts the machine's Prometheus (Debian's /usr/bin/prometheus) with its
// configuration and data in dir/prometheus, on the address asked for, else the one it served on
// before, else 127.0.0.1:9090, else a free port, scraping the dev process's metrics on
// metricsAddr and evaluating the rules of the deployment's configuration deployConfig.
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
	addr, err := ports.pick("prometheus", asked, "127.0.0.1:9090")
	if err != nil {
		return nil, err
	}
	p, err := localenv.StartPrometheus(home, localenv.PrometheusOptions{Addr: addr, Config: func(addr string) ([]byte, error) {
		return setup.config(addr, metricsAddr, targets)
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
	files := make([]string, len(p.setup.ruleFiles))
	wd, _ := os.Getwd()
	for i, f := range p.setup.ruleFiles {
		files[i] = f
		if rel, err := filepath.Rel(wd, f); err == nil && !strings.HasPrefix(rel, "..") {
			files[i] = rel
		}
	}
	return fmt.Sprintf("%d rules of %s", p.setup.rules, strings.Join(files, ", "))
}
