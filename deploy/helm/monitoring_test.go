package helm_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The one source of the rules and of the dashboard, inside the chart (Helm reads no file outside
// it); deploy/prometheus, deploy/check.sh, deploy's Prometheus tests and the compose stack use
// these files.
const (
	rulesFile     = "deploy/helm/acv/files/acv.rules.yml"
	dashboardFile = "deploy/helm/acv/files/acv.json"
)

// ruleFile is a Prometheus rule file, with only the fields acv's rules may use: decoding it
// strictly fails on any other, which the comparison below would otherwise miss.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

type rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// The PrometheusRule holds exactly the rules deploy/prometheus loads: the groups, the rules in
// order, every expression, duration, label and annotation.
func TestPrometheusRuleIsDeployPrometheus(t *testing.T) {
	var want ruleFile
	for _, f := range prometheusRuleFiles(t) {
		var rf ruleFile
		if err := yaml.UnmarshalStrict(readRepoFile(t, f), &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want.Groups = append(want.Groups, rf.Groups...)
	}
	r := render(t, readValues(t, productionValues))
	prs := ofType[*monitoringv1.PrometheusRule](r)
	if len(prs) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(prs))
	}
	var got ruleFile
	for _, g := range prs[0].Spec.Groups {
		rg := ruleGroup{Name: g.Name}
		if g.Interval != nil {
			rg.Interval = string(*g.Interval)
		}
		if g.Limit != nil || g.QueryOffset != nil || g.PartialResponseStrategy != "" || len(g.Labels) > 0 {
			t.Errorf("group %s has settings the rule file has not", g.Name)
		}
		for _, ru := range g.Rules {
			x := rule{Record: ru.Record, Alert: ru.Alert, Expr: ru.Expr.String(), Labels: ru.Labels, Annotations: ru.Annotations}
			if ru.For != nil {
				x.For = string(*ru.For)
			}
			if ru.KeepFiringFor != nil {
				t.Errorf("rule %s%s has keep_firing_for, which the rule file has not", ru.Record, ru.Alert)
			}
			rg.Rules = append(rg.Rules, x)
		}
		got.Groups = append(got.Groups, rg)
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := yaml.Marshal(got)
		wb, _ := yaml.Marshal(want)
		t.Errorf("the PrometheusRule's rules differ from deploy/prometheus's:\n%s\nwant:\n%s", gb, wb)
	}
	n := 0
	for _, g := range want.Groups {
		n += len(g.Rules)
	}
	if n == 0 {
		t.Fatal("no rules compared")
	}
	t.Logf("%d groups, %d rules", len(want.Groups), n)
}

// prometheusRuleFiles are the rule files deploy/prometheus/prometheus.yml names (globs
// expanded), as repository paths.
func prometheusRuleFiles(t *testing.T) []string {
	t.Helper()
	var cfg struct {
		RuleFiles []string `json:"rule_files"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/prometheus/prometheus.yml"), &cfg); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pattern := range cfg.RuleFiles {
		matches, err := filepath.Glob(filepath.Join("../prometheus", pattern))
		if err != nil || len(matches) == 0 {
			t.Fatalf("prometheus.yml's rule file %s matches nothing", pattern)
		}
		for _, m := range matches {
			out = append(out, repoPath(t, m))
		}
	}
	return out
}

// repoPath turns a path relative to this directory into one relative to the repository's root.
func repoPath(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// There is one rule file and one dashboard: everything that reads them names the chart's files,
// and no copy of either (or a link to it) lives anywhere else in the repository.
func TestOneSourceOfRulesAndDashboard(t *testing.T) {
	if got := prometheusRuleFiles(t); len(got) != 1 || got[0] != rulesFile {
		t.Errorf("deploy/prometheus/prometheus.yml loads %v, want [%s]", got, rulesFile)
	}
	var ruleTests struct {
		RuleFiles []string `json:"rule_files"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/prometheus/tests/acv.rules.test.yml"), &ruleTests); err != nil {
		t.Fatal(err)
	}
	for _, f := range ruleTests.RuleFiles {
		if p := repoPath(t, filepath.Join("../prometheus/tests", f)); p != rulesFile {
			t.Errorf("the promtool tests load %s, want %s", p, rulesFile)
		}
	}
	// deploy's Prometheus tests name the files relative to deploy/, check.sh from the root.
	for file, refs := range map[string]map[string]string{
		"deploy/prometheus_test.go": {`promRulesFile\s*=\s*"([^"]+)"`: rulesFile, `grafanaDashboard\s*=\s*"([^"]+)"`: dashboardFile},
		"deploy/check.sh":           {`(?m)^RULES=(\S+)`: rulesFile, `(?m)^DASHBOARD=(\S+)`: dashboardFile},
	} {
		text := string(readRepoFile(t, file))
		for pattern, want := range refs {
			m := regexp.MustCompile(pattern).FindStringSubmatch(text)
			if m == nil {
				t.Errorf("%s: no match for %s", file, pattern)
				continue
			}
			got := m[1]
			if strings.HasSuffix(file, ".go") {
				got = "deploy/" + got
			}
			if got != want {
				t.Errorf("%s reads %s, want %s", file, got, want)
			}
		}
	}
	var compose struct {
		Services map[string]struct {
			Volumes []string `json:"volumes"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "docker-compose.yml"), &compose); err != nil {
		t.Fatal(err)
	}
	for service, file := range map[string]string{"prometheus": rulesFile, "grafana": dashboardFile} {
		found := false
		for _, v := range compose.Services[service].Volumes {
			found = found || strings.HasPrefix(v, "./"+file+":")
		}
		if !found {
			t.Errorf("docker-compose.yml's %s does not mount %s", service, file)
		}
	}

	sources := map[string][]byte{}
	for _, f := range []string{rulesFile, dashboardFile} {
		sources[f] = readRepoFile(t, f)
	}
	skip := map[string]bool{".git": true, "node_modules": true, ".tools": true, ".acv": true, "bin": true}
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		rel := repoPath(t, p)
		if _, ok := sources[rel]; ok {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if target, err := filepath.EvalSymlinks(p); err == nil {
				if _, ok := sources[repoPath(t, target)]; ok {
					t.Errorf("%s links to %s: one file, please", rel, repoPath(t, target))
				}
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		for src, b := range sources {
			if info.Size() != int64(len(b)) {
				continue
			}
			if c, err := os.ReadFile(p); err == nil && bytes.Equal(c, b) {
				t.Errorf("%s is a copy of %s: one file, please", rel, src)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The dashboard's ConfigMap, labelled for Grafana's sidecar, holds files/acv.json with the
// compose stack's datasource uid replaced by grafanaDashboard.datasourceUID, and nothing else
// changed.
func TestDashboardConfigMapIsTheDashboard(t *testing.T) {
	var file any
	if err := json.Unmarshal(readRepoFile(t, dashboardFile), &file); err != nil {
		t.Fatal(err)
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			var cms []*corev1.ConfigMap
			for _, cm := range ofType[*corev1.ConfigMap](r) {
				if cm.Labels["grafana_dashboard"] == "1" {
					cms = append(cms, cm)
				}
			}
			if len(cms) != 1 {
				t.Fatalf("%d ConfigMaps labelled grafana_dashboard: \"1\", want 1", len(cms))
			}
			var got any
			if err := json.Unmarshal([]byte(cms[0].Data["acv.json"]), &got); err != nil {
				t.Fatalf("the ConfigMap's acv.json: %v", err)
			}
			uid := r.value(t, "grafanaDashboard.datasourceUID").(string)
			if want := withDatasource(file, "acv-prometheus", uid); !reflect.DeepEqual(got, want) {
				t.Error("the ConfigMap's dashboard is not files/acv.json with its datasource uid replaced")
			}
		})
	}
}

// withDatasource is a copy of the decoded dashboard v with every datasource of uid from set to
// uid to.
func withDatasource(v any, from, to string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = withDatasource(e, from, to)
		}
		if ds, ok := out["datasource"].(map[string]any); ok && ds["uid"] == from {
			ds["uid"] = to
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withDatasource(e, from, to)
		}
		return out
	}
	return v
}

// The ServiceMonitor scrapes every workload's debug port, and the job each gets (by its
// relabelling) is one the dashboard's and the rules' job matchers select: acv-api for the API.
func TestServiceMonitorScrapesEveryWorkload(t *testing.T) {
	r := render(t, readValues(t, productionValues))
	sms := ofType[*monitoringv1.ServiceMonitor](r)
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(sms))
	}
	sm := sms[0]
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	jobs := map[string]string{} // component → job
	for _, w := range workloads(r) {
		if w.kind != "Deployment" {
			continue
		}
		var scraped []*corev1.Service
		for _, s := range ofType[*corev1.Service](r) {
			if selects(sm.Spec.Selector.MatchLabels, s.Labels) && selects(s.Spec.Selector, w.pod.Labels) {
				scraped = append(scraped, s)
			}
		}
		if len(scraped) != 1 {
			t.Errorf("%s is scraped through %d Services, want 1", w, len(scraped))
			continue
		}
		s := scraped[0]
		var port *corev1.ServicePort
		for i := range s.Spec.Ports {
			if s.Spec.Ports[i].Name == ep.Port {
				port = &s.Spec.Ports[i]
			}
		}
		if port == nil || containerPort(w.pod.Spec.Containers[0].Ports, port.TargetPort) != containerPort(w.pod.Spec.Containers[0].Ports, intstr.FromString("metrics")) {
			t.Errorf("Service %s does not lead the ServiceMonitor to %s's debug port", s.Name, w)
		}
		if ep.Path != "/metrics" {
			t.Errorf("the ServiceMonitor scrapes %s", ep.Path)
		}
		jobs[w.component()] = relabelJob(t, ep.RelabelConfigs, s.Labels)
	}
	if jobs["api"] != "acv-api" {
		t.Errorf("the API's job is %q; the dashboard and the rules know it as acv-api", jobs["api"])
	}
	var text strings.Builder
	text.Write(readRepoFile(t, rulesFile))
	text.Write(readRepoFile(t, dashboardFile))
	matcher := regexp.MustCompile(`job(=~|=)\\?"([^"\\]*)\\?"`)
	for _, m := range matcher.FindAllStringSubmatch(text.String(), -1) {
		op, v := m[1], m[2]
		var hit []string
		for _, job := range jobs {
			if op == "=" && job == v || op == "=~" && regexp.MustCompile("^(?:"+v+")$").MatchString(job) {
				hit = append(hit, job)
			}
		}
		if len(hit) == 0 || op == "=~" && len(hit) != len(jobs) {
			t.Errorf("job%s%q selects %v of the release's jobs %v", op, v, hit, jobs)
		}
	}
}

// relabelJob applies the replace relabellings that set job to a target of a Service with the
// given labels, as Prometheus would (regex (.*) and separator ; by default).
func relabelJob(t *testing.T, rcs []monitoringv1.RelabelConfig, labels map[string]string) string {
	t.Helper()
	job := ""
	for _, rc := range rcs {
		if rc.TargetLabel != "job" {
			continue
		}
		if rc.Action != "" && strings.ToLower(rc.Action) != "replace" {
			t.Fatalf("relabelling action %s", rc.Action)
		}
		var vals []string
		for _, l := range rc.SourceLabels {
			name := strings.TrimPrefix(string(l), "__meta_kubernetes_service_label_")
			v := ""
			for k, lv := range labels {
				if regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(k, "_") == name {
					v = lv
				}
			}
			vals = append(vals, v)
		}
		sep := ";"
		if rc.Separator != nil {
			sep = *rc.Separator
		}
		re := "(.*)"
		if rc.Regex != "" {
			re = rc.Regex
		}
		repl := "$1"
		if rc.Replacement != nil {
			repl = *rc.Replacement
		}
		rx := regexp.MustCompile("^(?:" + re + ")$")
		src := strings.Join(vals, sep)
		if m := rx.FindStringSubmatchIndex(src); m != nil {
			job = string(rx.ExpandString(nil, repl, src, m))
		}
	}
	if job == "" {
		t.Fatal("no relabelling sets the job")
	}
	return job
}
