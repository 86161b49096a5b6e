package localenv

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A cluster made of real redis-servers: three masters cover the 16384 slots in equal
// contiguous ranges, its URL names every node, and a node killed with SIGKILL comes back in
// its place.
func TestRedisCluster(t *testing.T) {
	c, err := StartRedisCluster(t.TempDir(), ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	masters, ranges, err := c.Masters()
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters %v: %v", masters, err)
	}
	covered := 0
	for i, rs := range ranges {
		if len(rs) != 1 {
			t.Fatalf("master %s serves %v, want one range", masters[i].Addr, rs)
		}
		lo, hi, _ := strings.Cut(rs[0], "-")
		covered += atoi(t, hi) - atoi(t, lo) + 1
		if masters[i].ID == "" {
			t.Fatalf("master %s has no cluster id", masters[i].Addr)
		}
	}
	if covered != 16384 {
		t.Fatalf("masters cover %d slots", covered)
	}
	u, err := url.Parse(c.URL())
	if err != nil || u.Scheme != "redis-cluster" || u.Host != c.Nodes[0].Addr || len(u.Query()["addr"]) != 2 {
		t.Fatalf("url %q (%v)", c.URL(), err)
	}

	n := masters[1]
	n.Kill()
	if !n.Exited() {
		t.Fatal("killed node still running")
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(); err != nil {
		t.Fatal(err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
