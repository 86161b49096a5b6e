package helm_test

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// docs/capacity.md's table of pod sizes is what the chart renders by default: the sizes are
// decided in values.yaml, and the document that explains them may not drift from it.
func TestCapacityDocGivesTheChartsResources(t *testing.T) {
	doc := string(readRepoFile(t, "docs/capacity.md"))
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|([^|]+)\\|([^|]+)\\|([^|]+)\\|([^|]+)\\|")
	documented := map[string][4]string{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = [4]string{m[2], m[3], m[4], m[5]}
	}
	r := render(t, nil)
	for _, w := range workloads(r) {
		sizes, ok := documented[w.component()]
		if !ok {
			t.Errorf("docs/capacity.md does not size the %s", w.component())
			continue
		}
		delete(documented, w.component())
		res := w.pod.Spec.Containers[0].Resources
		for i, q := range []resource.Quantity{
			res.Requests[corev1.ResourceCPU], res.Limits[corev1.ResourceCPU],
			res.Requests[corev1.ResourceMemory], res.Limits[corev1.ResourceMemory],
		} {
			want, err := resource.ParseQuantity(strings.TrimSpace(sizes[i]))
			if err != nil {
				t.Errorf("docs/capacity.md, %s: %q: %v", w.component(), sizes[i], err)
				continue
			}
			if q.Cmp(want) != 0 {
				t.Errorf("%s: the chart gives %s, docs/capacity.md %s", w, q.String(), want.String())
			}
		}
	}
	for c := range documented {
		t.Errorf("docs/capacity.md sizes %s, which the chart does not run", c)
	}
}
