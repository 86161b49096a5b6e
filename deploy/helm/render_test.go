// Package helm_test renders the Helm chart deploy/helm/acv with Helm's own Go packages (no helm
// binary, no cluster, nothing fetched at run time) and checks it as a reviewer of a Kubernetes
// deployment would: every rendered object decodes strictly into its Kubernetes (or
// prometheus-operator) type, every container is bounded, probed and locked down, every
// Deployment has a PodDisruptionBudget, Services and the autoscaler point at what exists, the
// environment is what internal/service reads, and the monitoring objects are deploy/prometheus's
// own files. It lives apart from the service's packages so the acv binary never links Helm.
package helm_test

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	chartDir = "acv"
	// productionValues is a production release's values file, beside the chart.
	productionValues = "values-production.yaml"
	releaseName      = "acv"
	namespace        = "acv"
)

// oldestKube is the oldest Kubernetes the chart supports (its Chart.yaml's kubeVersion); the
// chart is rendered as for it.
var oldestKube = chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// valueSets are the values every check runs with: the chart's defaults and a production
// release's.
var valueSets = []struct{ name, file string }{
	{"default values", ""},
	{"production values", productionValues},
}

// strict decodes a rendered document into its registered Go type and fails on a field the type
// does not have (a misspelt or misplaced one) or a field given twice.
var strict = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
}()

// object is one rendered Kubernetes object.
type object struct {
	// source is the template it came from.
	source string
	// hook is set for the objects Helm creates as hooks, outside the release's manifest.
	hook *release.Hook
	obj  runtime.Object
	meta metav1.Object
}

// rendered is a release as `helm template` would print it, decoded.
type rendered struct {
	// values are the chart's values with the overrides applied.
	values  chartutil.Values
	objects []object
}

// readValues reads a values file of this directory; "" is no overrides.
func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return v.AsMap()
}

// overlay returns base with the YAML document extra merged over it (maps merged, other values
// replaced); base is left as it was.
func overlay(t *testing.T, base map[string]any, extra string) map[string]any {
	t.Helper()
	var add map[string]any
	if err := yaml.Unmarshal([]byte(extra), &add); err != nil {
		t.Fatalf("overlay %q: %v", extra, err)
	}
	var merge func(dst, src map[string]any) map[string]any
	merge = func(dst, src map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range dst {
			out[k] = v
		}
		for k, v := range src {
			if sm, ok := v.(map[string]any); ok {
				if dm, ok := out[k].(map[string]any); ok {
					out[k] = merge(dm, sm)
					continue
				}
			}
			out[k] = v
		}
		return out
	}
	return merge(base, add)
}

// render renders the chart with overrides and decodes every object, hooks included; it fails
// the test when Helm refuses or an object does not decode strictly.
func render(t *testing.T, overrides map[string]any) rendered {
	t.Helper()
	r, err := tryRender(overrides)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryRender is render that returns Helm's refusal (a failed template, a value the schema
// refuses) or a decoding error instead of failing.
func tryRender(overrides map[string]any) (rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return rendered{}, fmt.Errorf("load chart: %w", err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly, install.DryRun = true, true
	install.ReleaseName, install.Namespace = releaseName, namespace
	install.KubeVersion = &oldestKube
	rel, err := install.Run(ch, overrides)
	if err != nil {
		return rendered{}, fmt.Errorf("render: %w", err)
	}
	vals, err := chartutil.CoalesceValues(ch, overrides)
	if err != nil {
		return rendered{}, err
	}
	r := rendered{values: vals}
	docs := releaseutil.SplitManifests(rel.Manifest)
	for _, name := range sortedKeys(docs) {
		o, err := decode(docs[name])
		if err != nil {
			return rendered{}, err
		}
		r.objects = append(r.objects, o)
	}
	for _, h := range rel.Hooks {
		o, err := decode(h.Manifest)
		if err != nil {
			return rendered{}, err
		}
		o.hook = h
		r.objects = append(r.objects, o)
	}
	if len(r.objects) == 0 {
		return rendered{}, fmt.Errorf("the chart rendered nothing")
	}
	return r, nil
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (\S+)`)

func decode(doc string) (object, error) {
	var o object
	if m := sourceLine.FindStringSubmatch(doc); m != nil {
		o.source = m[1]
	}
	obj, gvk, err := strict.Decode([]byte(doc), nil, nil)
	if err != nil {
		return o, fmt.Errorf("%s: %v\n%s", o.source, err, doc)
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return o, fmt.Errorf("%s: %s has no object metadata", o.source, gvk)
	}
	o.obj, o.meta = obj, meta
	return o, nil
}

func sortedKeys(docs map[string]string) []string {
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	// SplitManifests names them manifest-0, manifest-1, …: keep the chart's order.
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	return keys
}

// ofType is every rendered object of type T.
func ofType[T runtime.Object](r rendered) []T {
	var out []T
	for _, o := range r.objects {
		if v, ok := o.obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// workload is a Deployment's or a Job's pod template with the object's kind and name.
type workload struct {
	kind, name string
	pod        corev1.PodTemplateSpec
}

// component is the app.kubernetes.io/component of its pods: api, relay, log-writer, console or
// migrate.
func (w workload) component() string { return w.pod.Labels["app.kubernetes.io/component"] }

func (w workload) String() string { return w.kind + " " + w.name }

func workloads(r rendered) []workload {
	var out []workload
	for _, d := range ofType[*appsv1.Deployment](r) {
		out = append(out, workload{"Deployment", d.Name, d.Spec.Template})
	}
	for _, j := range ofType[*batchv1.Job](r) {
		out = append(out, workload{"Job", j.Name, j.Spec.Template})
	}
	return out
}

// deploymentOf is the Deployment whose pods have the component label c, or nil.
func deploymentOf(r rendered, c string) *appsv1.Deployment {
	for _, d := range ofType[*appsv1.Deployment](r) {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == c {
			return d
		}
	}
	return nil
}

// selects tells whether a label selector given as matchLabels selects labels.
func selects(matchLabels, labels map[string]string) bool {
	if len(matchLabels) == 0 {
		return false
	}
	for k, v := range matchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// value reads a value of the rendered release by its dotted path.
func (r rendered) value(t *testing.T, path string) any {
	t.Helper()
	v, err := r.values.PathValue(path)
	if err != nil {
		// PathValue answers tables only through Table.
		tbl, terr := r.values.Table(path)
		if terr != nil {
			t.Fatalf("value %s: %v", path, err)
		}
		return tbl.AsMap()
	}
	return v
}

// ports reads a values list of NetworkPolicy ports (networkPolicy.redis.ports, …).
func (r rendered) ports(t *testing.T, path string) []networkingv1.NetworkPolicyPort {
	t.Helper()
	b, err := yaml.Marshal(r.value(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var ports []networkingv1.NetworkPolicyPort
	if err := yaml.UnmarshalStrict(b, &ports); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ports
}

// readRepoFile reads a file by its path from the repository's root.
func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The types every check below expects to find; a kind the chart starts rendering needs a
// reviewer's look here first.
var knownKinds = map[string]bool{
	"Deployment": true, "Job": true, "Service": true, "HorizontalPodAutoscaler": true,
	"PodDisruptionBudget": true, "NetworkPolicy": true, "ServiceAccount": true, "Secret": true,
	"ConfigMap": true, "ServiceMonitor": true, "PrometheusRule": true,
}

func kindOf(o runtime.Object) string {
	t := fmt.Sprintf("%T", o)
	return t[strings.LastIndex(t, ".")+1:]
}
