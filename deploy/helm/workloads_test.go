package helm_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Every container has CPU and memory requests and limits (limits no lower than requests),
// liveness and readiness probes (a Job's none), an image pinned by tag, and runs as a non-root
// user on a read-only root file system with every capability dropped, no privilege escalation
// and the RuntimeDefault seccomp profile; no pod mounts a service account token.
func TestEveryContainerIsBoundedProbedAndLockedDown(t *testing.T) {
	image := regexp.MustCompile(`^[^:@\s]+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(@sha256:[0-9a-f]{64})?$`)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			for _, w := range workloads(r) {
				spec := w.pod.Spec
				if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
					t.Errorf("%s mounts a service account token", w)
				}
				psc := spec.SecurityContext
				if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
					t.Errorf("%s: the pod does not run as a non-root user", w)
				}
				if len(spec.InitContainers)+len(spec.EphemeralContainers) > 0 {
					t.Errorf("%s has containers besides its main ones, unchecked here", w)
				}
				for _, c := range spec.Containers {
					where := w.String() + " container " + c.Name
					for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
						req, okReq := c.Resources.Requests[res]
						lim, okLim := c.Resources.Limits[res]
						if !okReq || !okLim || req.IsZero() || lim.IsZero() {
							t.Errorf("%s: %s request or limit missing", where, res)
						} else if lim.Cmp(req) < 0 {
							t.Errorf("%s: %s limit %s below its request %s", where, res, lim.String(), req.String())
						}
					}
					if w.kind == "Deployment" {
						for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
							if p == nil || p.HTTPGet == nil {
								t.Errorf("%s: no HTTP %s probe", where, name)
							}
						}
					}
					if !image.MatchString(c.Image) || strings.HasSuffix(strings.Split(c.Image, "@")[0], ":latest") {
						t.Errorf("%s: image %q is not pinned by a tag", where, c.Image)
					}
					sc := c.SecurityContext
					switch {
					case sc == nil:
						t.Errorf("%s: no security context", where)
						continue
					case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
						t.Errorf("%s: root file system writable", where)
					case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
						t.Errorf("%s: privilege escalation allowed", where)
					case sc.Privileged != nil && *sc.Privileged:
						t.Errorf("%s: privileged", where)
					case sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
						t.Errorf("%s: capabilities %+v, want all dropped and none added", where, sc.Capabilities)
					case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
						t.Errorf("%s: runAsNonRoot not set on the container", where)
					}
					profile := sc.SeccompProfile
					if profile == nil && psc != nil {
						profile = psc.SeccompProfile
					}
					if profile == nil || profile.Type != corev1.SeccompProfileTypeRuntimeDefault {
						t.Errorf("%s: seccomp profile %+v, want RuntimeDefault", where, profile)
					}
				}
			}
		})
	}
}

// The image deploy/Dockerfile builds runs as the user the chart's pods run as, on an empty
// base.
func TestDockerfileMatchesTheChart(t *testing.T) {
	var from, user string
	for _, line := range strings.Split(string(readRepoFile(t, "deploy/Dockerfile")), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && strings.EqualFold(f[0], "FROM"):
			from, user = f[1], ""
		case len(f) == 2 && strings.EqualFold(f[0], "USER"):
			user = f[1]
		}
	}
	if from != "scratch" {
		t.Errorf("the image's last stage is FROM %s, want scratch (the binary alone)", from)
	}
	r := render(t, nil)
	for _, w := range workloads(r) {
		psc := w.pod.Spec.SecurityContext
		if want := formatIDs(psc.RunAsUser, psc.RunAsGroup); user != want {
			t.Errorf("the image's USER is %q, %s runs as %q", user, w, want)
		}
	}
}

func formatIDs(uid, gid *int64) string {
	if uid == nil || gid == nil {
		return ""
	}
	return strings.Join([]string{itoa(*uid), itoa(*gid)}, ":")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Every Deployment has exactly one PodDisruptionBudget, which selects its pods and lets a pod
// that is not ready be evicted.
func TestEveryDeploymentHasAPodDisruptionBudget(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			pdbs := ofType[*policyv1.PodDisruptionBudget](r)
			used := map[string]bool{}
			for _, d := range ofType[*appsv1.Deployment](r) {
				var mine []*policyv1.PodDisruptionBudget
				for _, p := range pdbs {
					if p.Spec.Selector != nil && len(p.Spec.Selector.MatchExpressions) == 0 && selects(p.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
						mine = append(mine, p)
						used[p.Name] = true
					}
				}
				if len(mine) != 1 {
					t.Errorf("Deployment %s has %d PodDisruptionBudgets, want 1", d.Name, len(mine))
					continue
				}
				p := mine[0]
				if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
					t.Errorf("PodDisruptionBudget %s bounds nothing", p.Name)
				}
				if p.Spec.UnhealthyPodEvictionPolicy == nil || *p.Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow {
					t.Errorf("PodDisruptionBudget %s lets unready pods block a drain", p.Name)
				}
			}
			for _, p := range pdbs {
				if !used[p.Name] {
					t.Errorf("PodDisruptionBudget %s selects no Deployment's pods", p.Name)
				}
			}
		})
	}
}

// Each Service selects the pods of exactly one workload, and each of its ports reaches a port
// those pods' container declares.
func TestServicesSelectTheirPods(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			for _, s := range ofType[*corev1.Service](r) {
				var matched []workload
				for _, w := range workloads(r) {
					if selects(s.Spec.Selector, w.pod.Labels) {
						matched = append(matched, w)
					}
				}
				if len(matched) != 1 {
					t.Errorf("Service %s selects the pods of %d workloads, want 1: %v", s.Name, len(matched), matched)
					continue
				}
				w := matched[0]
				if w.kind != "Deployment" {
					t.Errorf("Service %s selects the pods of %s", s.Name, w)
				}
				for _, sp := range s.Spec.Ports {
					if !declares(w.pod.Spec.Containers, sp.TargetPort) {
						t.Errorf("Service %s port %s: %s declares no container port %s", s.Name, sp.Name, w, sp.TargetPort.String())
					}
				}
			}
		})
	}
}

// declares tells whether one of the containers declares the port, by name or number.
func declares(cs []corev1.Container, port intstr.IntOrString) bool {
	for _, c := range cs {
		for _, p := range c.Ports {
			if port.Type == intstr.String && p.Name == port.StrVal || port.Type == intstr.Int && p.ContainerPort == port.IntVal {
				return true
			}
		}
	}
	return false
}

// The autoscaler scales the API Deployment on CPU, whose containers request CPU; the Deployment
// then leaves its replica count to it, so an upgrade does not reset it.
func TestAutoscalerTargetsTheAPI(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			hpas := ofType[*autoscalingv2.HorizontalPodAutoscaler](r)
			if len(hpas) != 1 {
				t.Fatalf("%d HorizontalPodAutoscalers, want 1 (the API's)", len(hpas))
			}
			h := hpas[0]
			ref := h.Spec.ScaleTargetRef
			var target *appsv1.Deployment
			for _, d := range ofType[*appsv1.Deployment](r) {
				if ref.Kind == "Deployment" && ref.APIVersion == "apps/v1" && ref.Name == d.Name {
					target = d
				}
			}
			if target == nil {
				t.Fatalf("the autoscaler targets %s %s %s, which the chart does not make", ref.APIVersion, ref.Kind, ref.Name)
			}
			if c := target.Spec.Template.Labels["app.kubernetes.io/component"]; c != "api" {
				t.Errorf("the autoscaler scales the %s", c)
			}
			if target.Spec.Replicas != nil {
				t.Errorf("Deployment %s sets replicas as well as its autoscaler", target.Name)
			}
			if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
				t.Errorf("autoscaler bounds %v..%d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
			}
			if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
				h.Spec.Metrics[0].Resource.Target.AverageUtilization == nil {
				t.Fatalf("the autoscaler scales on %+v, want CPU utilization", h.Spec.Metrics)
			}
			for _, c := range target.Spec.Template.Spec.Containers {
				if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
					t.Errorf("container %s requests no CPU: its utilization is undefined", c.Name)
				}
			}
		})
	}
}

// Every pod is isolated by a NetworkPolicy in both directions. The API reaches Redis and
// PostgreSQL (and DNS), never Kafka; the relay and the log writer reach Kafka; no rule opens
// every port; the console's port is reachable only from console.allowFrom, by default from
// nowhere.
func TestNetworkPolicies(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, readValues(t, vs.file))
			kafka := r.ports(t, "networkPolicy.kafka.ports")
			redis := r.ports(t, "networkPolicy.redis.ports")
			pg := r.ports(t, "networkPolicy.postgres.ports")
			admin := []networkingv1.NetworkPolicyPort{{Port: ptr(intstr.Parse(fmt.Sprint(r.value(t, "ports.admin"))))}}
			allowFrom, _ := r.value(t, "console.allowFrom").([]any)
			nps := ofType[*networkingv1.NetworkPolicy](r)
			for _, w := range workloads(r) {
				var ingress []networkingv1.NetworkPolicyIngressRule
				var egress []networkingv1.NetworkPolicyEgressRule
				types := map[networkingv1.PolicyType]bool{}
				for _, np := range nps {
					if selects(np.Spec.PodSelector.MatchLabels, w.pod.Labels) {
						for _, pt := range np.Spec.PolicyTypes {
							types[pt] = true
						}
						ingress = append(ingress, np.Spec.Ingress...)
						egress = append(egress, np.Spec.Egress...)
					}
				}
				if !types[networkingv1.PolicyTypeIngress] || !types[networkingv1.PolicyTypeEgress] {
					t.Errorf("%s is not isolated by a NetworkPolicy both ways (%v)", w, types)
					continue
				}
				for _, rule := range ingress {
					if len(rule.Ports) == 0 {
						t.Errorf("%s: an ingress rule opens every port", w)
					}
				}
				reaches := func(ports []networkingv1.NetworkPolicyPort) bool {
					for _, rule := range egress {
						if len(rule.Ports) == 0 || portsOverlap(rule.Ports, ports) {
							return true
						}
					}
					return false
				}
				c := w.component()
				if got, want := reaches(kafka), c == "relay" || c == "log-writer"; got != want {
					t.Errorf("%s reaches Kafka: %v, want %v", w, got, want)
				}
				if got, want := reaches(redis), c != "migrate"; got != want {
					t.Errorf("%s reaches Redis: %v, want %v", w, got, want)
				}
				if !reaches(pg) {
					t.Errorf("%s cannot reach PostgreSQL", w)
				}
				for _, rule := range ingress {
					if !portsOverlap(rule.Ports, admin) {
						continue
					}
					if c != "console" {
						t.Errorf("%s accepts connections on the console's port", w)
					}
					if len(rule.From) == 0 || len(rule.From) != len(allowFrom) {
						t.Errorf("%s: the console's port is open to %d peers, console.allowFrom names %d", w, len(rule.From), len(allowFrom))
					}
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// portsOverlap tells whether two lists of NetworkPolicy ports share a numbered port and
// protocol (TCP when unset).
func portsOverlap(a, b []networkingv1.NetworkPolicyPort) bool {
	proto := func(p networkingv1.NetworkPolicyPort) corev1.Protocol {
		if p.Protocol == nil {
			return corev1.ProtocolTCP
		}
		return *p.Protocol
	}
	for _, x := range a {
		for _, y := range b {
			if x.Port != nil && y.Port != nil && x.Port.String() == y.Port.String() && proto(x) == proto(y) {
				return true
			}
		}
	}
	return false
}
