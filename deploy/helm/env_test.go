package helm_test

import (
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/settings"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Every environment variable a container sets is one the service reads (internal/settings'
// Service list, which README's configuration table is), set once, and none comes in bulk (envFrom).
func TestEnvironmentIsWhatTheServiceReads(t *testing.T) {
	read := map[string]bool{}
	for _, s := range settings.Service {
		read[s.Name] = true
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			for _, w := range workloads(r) {
				for _, c := range w.pod.Spec.Containers {
					if len(c.EnvFrom) > 0 {
						t.Errorf("%s takes variables from %v, unchecked", w, c.EnvFrom)
					}
					seen := map[string]bool{}
					for _, e := range c.Env {
						if !read[e.Name] {
							t.Errorf("%s sets %s, which acv does not read (internal/settings.Service)", w, e.Name)
						}
						if seen[e.Name] {
							t.Errorf("%s sets %s twice", w, e.Name)
						}
						seen[e.Name] = true
					}
				}
			}
		})
	}
}

// wantGates are the dependencies whose loss makes each workload unready, in the kafka and the
// direct pipeline: an API replica (and the console) stays ready while Kafka or PostgreSQL is
// down, since it still verifies; a worker goes unready without what it moves events through.
var wantGates = map[string]map[bool][]string{
	"api":        {true: {"redis"}, false: {"redis"}},
	"console":    {true: {"redis"}, false: {"redis"}},
	"relay":      {true: {"kafka", "redis"}, false: {"postgres", "redis"}},
	"log-writer": {true: {"kafka", "postgres"}},
}

var wantRoles = map[string]service.Roles{
	"api":        {API: true},
	"console":    {API: true},
	"relay":      {Relay: true},
	"log-writer": {Consumer: true},
}

// Each workload's environment makes the process it should be, read by service.FromEnv as
// `acv serve` reads it and accepted by Validate: its roles; readiness that gates on the
// dependencies it cannot work without (service.Config.ReadinessGates); probes on the address
// that serves them (/readyz and /healthz on the API port for the API, on the debug listener for
// the others), listening beyond loopback; the console's admin API in the console's pods only,
// their client API on loopback; a grace period longer than the preStop sleep and the drain.
func TestEachWorkloadIsTheProcessItShouldBe(t *testing.T) {
	sets := append([]struct{ name, file string }{}, valueSets...)
	sets = append(sets, struct{ name, file string }{"direct pipeline", ""})
	for _, vs := range sets {
		t.Run(vs.name, func(t *testing.T) {
			vals := readValues(t, vs.file)
			if vs.name == "direct pipeline" {
				vals = overlay(t, vals, "kafka: {brokers: ''}")
			}
			r := render(t, vals)
			for _, w := range workloads(r) {
				c := w.component()
				cfg := configOf(t, w)
				if c == "migrate" {
					if cfg.DatabaseURL == "" {
						t.Errorf("%s has no database URL", w)
					}
					continue
				}
				if err := cfg.Validate(); err != nil {
					t.Errorf("%s: acv serve would refuse to start: %v", w, err)
					continue
				}
				if cfg.Roles != wantRoles[c] {
					t.Errorf("%s runs roles %+v, want %+v", w, cfg.Roles, wantRoles[c])
				}
				var gates []string
				for dep, g := range cfg.ReadinessGates() {
					if g {
						gates = append(gates, dep)
					}
				}
				sort.Strings(gates)
				if want := wantGates[c][cfg.UsesKafka()]; !reflect.DeepEqual(gates, want) {
					t.Errorf("%s goes unready when one of %v is down, want %v", w, gates, want)
				}
				if client, err := service.NewRedisClient(cfg.RedisURL, 1); err != nil {
					t.Errorf("%s: %v", w, err)
				} else {
					if _, ok := client.(*redis.ClusterClient); !ok {
						t.Errorf("%s: %s does not name a Redis Cluster", w, cfg.RedisURL)
					}
					client.Close()
				}
				checkAddresses(t, w, cfg)
				checkProbes(t, w, cfg)
				spec := w.pod.Spec
				preStop := int64(0)
				if l := spec.Containers[0].Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
					preStop = l.PreStop.Sleep.Seconds
				}
				if c == "api" && preStop == 0 {
					t.Errorf("%s: no preStop sleep: replicas stop accepting while still in the Service's endpoints", w)
				}
				if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace <= time.Duration(preStop)*time.Second+cfg.Drain {
					t.Errorf("%s: grace period %s, not longer than the preStop sleep %ds and the drain %s", w, grace, preStop, cfg.Drain)
				}
			}
		})
	}
}

// checkAddresses holds the listeners of w's process to its container's ports.
func checkAddresses(t *testing.T, w workload, cfg service.Config) {
	t.Helper()
	c := w.component()
	ports := w.pod.Spec.Containers[0].Ports
	want := func(what, addr, portName string, public bool) {
		host, port := splitAddr(t, addr)
		if n := containerPort(ports, intstr.FromString(portName)); n == 0 || strconv.Itoa(int(n)) != port {
			t.Errorf("%s: %s listens on %s, not on its container port %s (%d)", w, what, addr, portName, n)
		}
		if loopback := host == "localhost" || net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback(); loopback == public {
			t.Errorf("%s: %s listens on %s: public %v, want %v", w, what, addr, !loopback, public)
		}
	}
	want("the debug listener (ACV_DEBUG_ADDR)", cfg.DebugAddr, "metrics", true)
	switch c {
	case "api":
		want("the API (ACV_HTTP_ADDR)", cfg.HTTPAddr, "http", true)
		if cfg.AdminAddr != "" {
			t.Errorf("%s serves the console on %s", w, cfg.AdminAddr)
		}
	case "console":
		want("the console (ACV_ADMIN_ADDR)", cfg.AdminAddr, "admin", true)
		if host, _ := splitAddr(t, cfg.HTTPAddr); !net.ParseIP(host).IsLoopback() {
			t.Errorf("%s serves the client API on %s, beyond loopback", w, cfg.HTTPAddr)
		}
	}
}

// checkProbes holds w's probes to the meaning of /healthz (the process runs) and /readyz (it can
// do its work), asked where its process serves them.
func checkProbes(t *testing.T, w workload, cfg service.Config) {
	t.Helper()
	c := w.pod.Spec.Containers[0]
	addr := cfg.DebugAddr
	if w.component() == "api" {
		// The load balancer's view: the API port answers /readyz as the traffic arrives there.
		addr = cfg.HTTPAddr
	}
	_, port := splitAddr(t, addr)
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{
		{"liveness", "/healthz", c.LivenessProbe},
		{"readiness", "/readyz", c.ReadinessProbe},
		{"startup", "/healthz", c.StartupProbe},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no %s probe", w, p.name)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path || strconv.Itoa(int(containerPort(c.Ports, g.Port))) != port {
			t.Errorf("%s: %s probe asks %s on port %s, want %s on %s", w, p.name, g.Path, g.Port.String(), p.path, addr)
		}
	}
	if r := c.ReadinessProbe; r != nil && r.TimeoutSeconds <= 2 {
		t.Errorf("%s: readiness timeout %ds: /readyz gives each dependency 2 s", w, r.TimeoutSeconds)
	}
}

func splitAddr(t *testing.T, addr string) (host, port string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return host, port
}

// containerPort is the number of a container port given by name or number; 0 when undeclared.
func containerPort(ports []corev1.ContainerPort, p intstr.IntOrString) int32 {
	for _, cp := range ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// secretStandIns are what the cluster's Secrets would give the variables read from them.
var secretStandIns = map[string]string{
	"ACV_DATABASE_URL": "postgresql://app:secret@acv-pg-rw.acv:5432/app",
	"ACV_REDIS_URL":    "redis-cluster://:secret@acv-redis-leader.redis:6379",
}

// configOf reads w's environment with service.FromEnv, as `acv serve` does. The process
// environment is set to exactly the container's (every other setting unset); a value from a
// Secret is a stand-in of its form; the master key file must be a mounted Secret item and is
// replaced by a file holding a fresh key.
func configOf(t *testing.T, w workload) service.Config {
	t.Helper()
	c := w.pod.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = w.name + "-5d8f7c9b6-x2x9q"
		case e.ValueFrom.SecretKeyRef != nil && secretStandIns[e.Name] != "":
			env[e.Name] = secretStandIns[e.Name]
		default:
			t.Fatalf("%s: %s comes from %+v, which this test cannot stand in for", w, e.Name, e.ValueFrom)
		}
	}
	if p, ok := env["ACV_MASTER_KEY_FILE"]; ok {
		if !mountsSecretItem(w.pod.Spec, c, p) {
			t.Errorf("%s: ACV_MASTER_KEY_FILE %s is no file of a mounted Secret", w, p)
		}
		env["ACV_MASTER_KEY_FILE"] = keyFile(t)
	}
	for _, s := range settings.Service {
		if v, ok := env[s.Name]; ok {
			t.Setenv(s.Name, v)
		} else {
			t.Setenv(s.Name, "")
			os.Unsetenv(s.Name)
		}
	}
	cfg, err := service.FromEnv()
	if err != nil {
		t.Fatalf("%s: acv would not start: %v", w, err)
	}
	return cfg
}

// mountsSecretItem tells whether the file at p is an item of a Secret volume mounted into c.
func mountsSecretItem(spec corev1.PodSpec, c corev1.Container, p string) bool {
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, p)
		if err != nil || rel != path.Base(p) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return true
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return true
				}
			}
		}
	}
	return false
}

func keyFile(t *testing.T) string {
	t.Helper()
	k, err := secrets.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "master-key")
	if err := os.WriteFile(f, []byte(k.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
