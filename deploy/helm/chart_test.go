package helm_test

import (
	"strings"
	"testing"

	"github.com/acv/acv/internal/secrets"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// `helm lint` with each value set finds nothing to warn about.
func TestChartLints(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, readValues(t, vs.file), namespace, &oldestKube)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}

// Every rendered object decodes strictly into its type (render fails otherwise), is of a kind
// the checks of this package look at, and has a name no other object of its kind has.
func TestChartRendersStrictly(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			seen := map[string]bool{}
			for _, o := range r.objects {
				kind := kindOf(o.obj)
				if !knownKinds[kind] {
					t.Errorf("%s renders a %s, which no check of this package looks at", o.source, kind)
				}
				if id := kind + "/" + o.meta.GetName(); seen[id] {
					t.Errorf("two objects %s", id)
				} else {
					seen[id] = true
				}
				if o.meta.GetNamespace() != "" {
					t.Errorf("%s %s names a namespace: the release's is used", kind, o.meta.GetName())
				}
			}
			for _, c := range []string{"api", "relay", "log-writer", "console"} {
				if deploymentOf(r, c) == nil {
					t.Errorf("no %s Deployment", c)
				}
			}
			t.Logf("%d objects", len(r.objects))
		})
	}
}

// The migrations run as a Job before the release's objects on every install and upgrade, and
// it depends on nothing that is created after it.
func TestMigrationsRunFirst(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, overlay(t, readValues(t, vs.file), "secret: {create: true, masterKey: "+strings.Repeat("ab", 32)+", databaseURL: postgres://acv@pg:5432/acv, databaseURLFrom: {name: ''}}"))
			var job *object
			for i, o := range r.objects {
				if _, ok := o.obj.(*batchv1.Job); ok {
					job = &r.objects[i]
				}
			}
			if job == nil || job.hook == nil {
				t.Fatal("the migrations Job is missing or not a hook")
			}
			events := map[string]bool{}
			for _, e := range job.hook.Events {
				events[string(e)] = true
			}
			if !events["pre-install"] || !events["pre-upgrade"] || len(events) != 2 {
				t.Errorf("the migrations run on %v, want pre-install and pre-upgrade", job.hook.Events)
			}
			j := job.obj.(*batchv1.Job)
			if args := j.Spec.Template.Spec.Containers[0].Args; len(args) != 1 || args[0] != "migrate" {
				t.Errorf("the Job runs %v, want [migrate]", args)
			}
			if sa := j.Spec.Template.Spec.ServiceAccountName; sa != "" && sa != "default" {
				t.Errorf("the Job uses ServiceAccount %s, which the release creates after it", sa)
			}
			// What the Job's pod reads must exist before it: a hook of a lower weight.
			for _, o := range r.objects {
				switch o.obj.(type) {
				case *corev1.Secret, *networkingv1.NetworkPolicy:
				default:
					continue
				}
				needed := false
				if s, ok := o.obj.(*corev1.Secret); ok {
					needed = s.Name == secretRefOf(t, j.Spec.Template.Spec.Containers[0], "ACV_DATABASE_URL")
				}
				if np, ok := o.obj.(*networkingv1.NetworkPolicy); ok {
					needed = selects(np.Spec.PodSelector.MatchLabels, j.Spec.Template.Labels)
				}
				if !needed {
					continue
				}
				if o.hook == nil || o.hook.Weight >= job.hook.Weight {
					t.Errorf("%s %s, which the migrations need, is not a hook made before them", kindOf(o.obj), o.meta.GetName())
				}
			}
		})
	}
}

// secretRefOf is the Secret a container's environment variable is read from.
func secretRefOf(t *testing.T, c corev1.Container, name string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name
		}
	}
	t.Fatalf("container %s reads %s from no Secret", c.Name, name)
	return ""
}

// A Secret the chart makes holds what ACV_MASTER_KEY_FILE reads: the keys of secret.masterKey,
// one a line, the first sealing; and it outlives the release.
func TestChartMadeSecret(t *testing.T) {
	k2, k1 := strings.Repeat("2b", 32), strings.Repeat("1a", 32)
	r := render(t, overlay(t, nil, "secret: {create: true, masterKey: 'k2:"+k2+",k1:"+k1+"', databaseURL: 'postgres://acv@pg:5432/acv'}"))
	secrets_ := ofType[*corev1.Secret](r)
	if len(secrets_) != 1 {
		t.Fatalf("%d Secrets, want 1", len(secrets_))
	}
	s := secrets_[0]
	ring, err := secrets.Parse(s.StringData["master-key"])
	if err != nil {
		t.Fatalf("the Secret's master-key does not parse: %v", err)
	}
	if ring.ActiveID() != "k2" || len(ring.IDs()) != 2 {
		t.Errorf("the keyring %s, want k2 sealing and k1 opening", ring)
	}
	if s.StringData["database-url"] != "postgres://acv@pg:5432/acv" {
		t.Errorf("database-url %q", s.StringData["database-url"])
	}
	if s.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the Secret would be deleted with the release: the API keys sealed under its master key would never open again")
	}
	for _, d := range ofType[*appsv1.Deployment](r) {
		if d.Spec.Template.Annotations["checksum/secret"] == "" {
			t.Errorf("Deployment %s does not roll when the Secret changes", d.Name)
		}
	}
}

// Without Kafka the relay writes the logs itself (the direct pipeline): no log writer, no
// Kafka setting, no Kafka egress.
func TestDirectPipeline(t *testing.T) {
	r := render(t, overlay(t, readValues(t, productionValues), "kafka: {brokers: ''}"))
	if d := deploymentOf(r, "log-writer"); d != nil {
		t.Errorf("Deployment %s runs a log writer without Kafka", d.Name)
	}
	for _, p := range ofType[*policyv1.PodDisruptionBudget](r) {
		if strings.Contains(p.Name, "log-writer") {
			t.Errorf("PodDisruptionBudget %s for a log writer that does not run", p.Name)
		}
	}
	for _, w := range workloads(r) {
		for _, e := range w.pod.Spec.Containers[0].Env {
			if e.Name == "KAFKA_BROKERS" || e.Name == "ACV_PIPELINE" && e.Value != "direct" {
				t.Errorf("%s sets %s=%s", w, e.Name, e.Value)
			}
		}
	}
	kafkaPorts := r.ports(t, "networkPolicy.kafka.ports")
	for _, np := range ofType[*networkingv1.NetworkPolicy](r) {
		for _, rule := range np.Spec.Egress {
			if portsOverlap(rule.Ports, kafkaPorts) {
				t.Errorf("NetworkPolicy %s lets its pods reach Kafka", np.Name)
			}
		}
	}
}

// What the chart refuses to render, each with a message that says what to change.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"more log writers than partitions", "kafka: {partitions: 4}\nlogWriter: {replicas: 5}", "exceeds kafka.partitions"},
		{"an image tagged latest", "image: {tag: latest}", "pin a version"},
		{"a digest that is not one", "image: {digest: 'sha256:abc'}", "image.digest"},
		{"a chart-made Secret without a master key", "secret: {create: true, databaseURL: 'postgres://x'}", "secret.masterKey"},
		{"a chart-made Secret without a database URL", "secret: {create: true, masterKey: '" + strings.Repeat("ab", 32) + "'}", "secret.databaseURL"},
		{"a grace period no longer than the drain", "api: {terminationGracePeriodSeconds: 20}", "must exceed"},
		{"a setting the chart sets itself", "env: {ACV_ROLES: api}", "set by the chart"},
		{"a misspelt value", "api: {replica: 3}", "replica"},
		{"an unknown top-level value", "kafkaBrokers: x:9092", "kafkaBrokers"},
		{"an autoscaler whose minimum exceeds its maximum", "api: {autoscaling: {minReplicas: 5, maxReplicas: 4}}", "minReplicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tryRender(overlay(t, nil, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render with %q: %v, want an error naming %q", tc.values, err, tc.want)
			}
		})
	}
}
