package localenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClusterOptions shape a Redis Cluster on loopback.
type ClusterOptions struct {
	// Masters is the number of masters, each serving an equal, contiguous range of the 16384
	// slots (as `redis-cli --cluster create` assigns them). Default 3.
	Masters int
	// Replicas is the number of replicas of each master. Default 0.
	Replicas int
	// AOF, FsyncAlways and Debug are RedisOptions' settings, for every node.
	AOF, FsyncAlways, Debug bool
	// NodeTimeout is cluster-node-timeout: how long a node may not answer before the others
	// count it failed (and, with a replica, fail it over). Default 5s.
	NodeTimeout time.Duration
}

// RedisCluster is a running Redis Cluster: redis-server processes with cluster-enabled, joined
// by `redis-cli --cluster create`.
type RedisCluster struct {
	// Nodes in start order. Which of them are masters changes with failovers: ask Masters.
	Nodes []*ClusterNode
	Dir   string
}

// ClusterNode is one redis-server of a cluster.
type ClusterNode struct {
	*Process
	Addr string
	Dir  string
	// ID is the node's cluster id (40 hex characters), as CLUSTER NODES names it.
	ID    string
	start func() (*Process, error)
}

// StartRedisCluster starts Masters×(1+Replicas) cluster-enabled redis-servers under dir, joins
// them with `redis-cli --cluster create`, and waits until the cluster is ready (WaitOK).
func StartRedisCluster(dir string, o ClusterOptions) (*RedisCluster, error) {
	o.Masters = cmp.Or(max(o.Masters, 0), 3)
	o.NodeTimeout = cmp.Or(max(o.NodeTimeout, 0), 5*time.Second)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli not installed (apt-get install redis-tools): %w", err)
	}
	c := &RedisCluster{Dir: dir}
	used := map[int]bool{}
	for i := range o.Masters * (1 + max(o.Replicas, 0)) {
		node, err := startNode(filepath.Join(dir, fmt.Sprintf("node-%d", i)), o, used)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	out, err := exec.Command(cli, append(args, "--cluster-replicas", strconv.Itoa(max(o.Replicas, 0)), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	if err := c.WaitOK(time.Minute); err != nil {
		c.Close()
		return nil, err
	}
	for _, n := range c.Nodes {
		if n.ID, err = command(n.Addr, "", "CLUSTER", "MYID"); err != nil {
			c.Close()
			return nil, fmt.Errorf("cluster id of %s: %w", n.Addr, err)
		}
	}
	return c, nil
}

func startNode(dir string, o ClusterOptions, used map[int]bool) (*ClusterNode, error) {
	var ports [2]int
	for i := range ports {
		// FreePort never hands out a port twice; used guards its fallback to the kernel's.
		for ports[i] == 0 || used[ports[i]] {
			p, err := FreePort()
			if err != nil {
				return nil, err
			}
			ports[i] = p
		}
		used[ports[i]] = true
	}
	n := &ClusterNode{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), Dir: dir}
	n.start = func() (*Process, error) {
		return startRedis(dir, ports[0], RedisOptions{AOF: o.AOF, FsyncAlways: o.FsyncAlways, Debug: o.Debug},
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(ports[1]),
			"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
			// A replica fails over however long it was out of touch: tests kill masters.
			"--cluster-replica-validity-factor", "0",
			// A replica's full sync starts at once rather than 5 s later.
			"--repl-diskless-sync-delay", "0")
	}
	var err error
	n.Process, err = n.start()
	return n, err
}

// Restart starts a stopped or killed node again, with its data directory and its place in the
// cluster (nodes.conf): it rejoins as the role the cluster gives it.
func (n *ClusterNode) Restart() error {
	if n.Process != nil && !n.Exited() {
		return fmt.Errorf("redis cluster node %s is running", n.Addr)
	}
	p, err := n.start()
	if err == nil {
		n.Process = p
	}
	return err
}

func (n *ClusterNode) running() bool { return n.Process != nil && !n.Exited() }

// Addrs are the nodes' client addresses, host:port, in start order.
func (c *RedisCluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// URL is the ACV_REDIS_URL naming the cluster: redis-cluster://first?addr=second&addr=….
// Any one node is enough to find the others; naming them all survives the loss of one.
func (c *RedisCluster) URL() string {
	addrs := c.Addrs()
	if len(addrs) == 1 {
		return "redis-cluster://" + addrs[0]
	}
	return "redis-cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
}

// Node is the node listening on addr, or nil.
func (c *RedisCluster) Node(addr string) *ClusterNode {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// Masters are the nodes that are masters now, as a running node's CLUSTER NODES says, each
// with the slot ranges it serves ("0-5460").
func (c *RedisCluster) Masters() ([]*ClusterNode, [][]string, error) {
	var lastErr error
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		text, err := command(n.Addr, "", "CLUSTER", "NODES")
		if err != nil {
			lastErr = err
			continue
		}
		var masters []*ClusterNode
		var slots [][]string
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			if flags := strings.Split(f[2], ","); !slices.Contains(flags, "master") || slices.Contains(flags, "fail") {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			if m := c.Node(addr); m != nil {
				masters = append(masters, m)
				slots = append(slots, f[8:])
			}
		}
		return masters, slots, nil
	}
	return nil, nil, fmt.Errorf("no running node answers CLUSTER NODES: %v", lastErr)
}

// WaitOK waits until every running node reports cluster_state:ok with every slot assigned and
// knows every node, and every replica's link to its master is up.
func (c *RedisCluster) WaitOK(within time.Duration) error {
	err := Poll(context.Background(), within, 50*time.Millisecond, func() error {
		for _, n := range c.Nodes {
			if !n.running() {
				continue
			}
			info, err := command(n.Addr, "", "CLUSTER", "INFO")
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
			for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384",
				"cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))} {
				if !strings.Contains(info, want+"\r\n") {
					return fmt.Errorf("%s: no %s in CLUSTER INFO", n.Addr, want)
				}
			}
			repl, err := command(n.Addr, "", "INFO", "replication")
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
			if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				return errors.New(n.Addr + ": replica not in sync with its master")
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis cluster not ready after %s: %w", within, err)
	}
	return nil
}

// Reshard moves slots slots from master from to master to with `redis-cli --cluster reshard`,
// as an operator scales a cluster out while clients keep using the keys.
func (c *RedisCluster) Reshard(from, to *ClusterNode, slots int) error {
	out, err := exec.Command("redis-cli", "--cluster", "reshard", from.Addr, "--cluster-from", from.ID,
		"--cluster-to", to.ID, "--cluster-slots", strconv.Itoa(slots), "--cluster-yes").CombinedOutput()
	if err != nil {
		// It prints a line per slot: the end says what went wrong.
		return fmt.Errorf("redis-cli --cluster reshard %d slots %s → %s: %w: %s", slots, from.Addr, to.Addr, err, out[max(0, len(out)-2000):])
	}
	return nil
}

// FlushAll empties every master (its replicas follow), keeping the cluster as it is.
func (c *RedisCluster) FlushAll() error {
	masters, _, err := c.Masters()
	if err != nil {
		return err
	}
	for _, m := range masters {
		if _, err := command(m.Addr, "", "FLUSHALL"); err != nil {
			return fmt.Errorf("flush %s: %w", m.Addr, err)
		}
	}
	return nil
}

// Close stops every node (SIGTERM, then SIGKILL after a few seconds).
func (c *RedisCluster) Close() {
	for _, n := range c.Nodes {
		n.Process.Stop(5 * time.Second)
	}
}
