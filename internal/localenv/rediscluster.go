package localenv

import (
	"bufio"
	"fmt"
	"io"
	"net"
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

func (o ClusterOptions) withDefaults() ClusterOptions {
	if o.Masters <= 0 {
		o.Masters = 3
	}
	if o.Replicas < 0 {
		o.Replicas = 0
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 5 * time.Second
	}
	return o
}

// RedisCluster is a running Redis Cluster: redis-server processes with cluster-enabled, joined
// by `redis-cli --cluster create`.
type RedisCluster struct {
	// Nodes in start order. Which of them are masters changes with failovers: ask Masters.
	Nodes []*ClusterNode
	Dir   string
	opts  ClusterOptions
}

// ClusterNode is one redis-server of a cluster.
type ClusterNode struct {
	*Process
	Addr string
	Dir  string
	// ID is the node's cluster id (40 hex characters), as CLUSTER NODES names it.
	ID string
	// BusPort is the port of the cluster bus (cluster-port), chosen free like Addr's port.
	BusPort int
	args    []string
}

// StartRedisCluster starts Masters×(1+Replicas) redis-servers with cluster-enabled, each on
// two free loopback ports (clients and cluster bus) and in a directory of its own under dir,
// joins them with `redis-cli --cluster create`, and waits until every node reports
// cluster_state:ok with all 16384 slots assigned and every replica is in sync with its master.
func StartRedisCluster(dir string, o ClusterOptions) (*RedisCluster, error) {
	o = o.withDefaults()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not installed (apt-get install redis-server): %w", err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli not installed (apt-get install redis-tools): %w", err)
	}
	c := &RedisCluster{Dir: dir, opts: o}
	n := o.Masters * (1 + o.Replicas)
	used := map[int]bool{}
	for i := 0; i < n; i++ {
		node, err := c.startNode(bin, filepath.Join(dir, fmt.Sprintf("node-%d", i)), used)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	args := append(c.Addrs(), "--cluster-replicas", strconv.Itoa(o.Replicas), "--cluster-yes")
	out, err := exec.Command(cli, append([]string{"--cluster", "create"}, args...)...).CombinedOutput()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	if err := c.WaitOK(time.Minute); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.readIDs(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startNode starts one cluster node on ports not in used.
func (c *RedisCluster) startNode(bin, dir string, used map[int]bool) (*ClusterNode, error) {
	if err := mkdirFor(dir, nil); err != nil {
		return nil, err
	}
	var ports [2]int
	for i := range ports {
		for {
			p, err := FreePort()
			if err != nil {
				return nil, err
			}
			// FreePort never hands out one port twice; used also guards the fallback to the
			// kernel's ports (see FreePort).
			if !used[p] {
				used[p] = true
				ports[i] = p
				break
			}
		}
	}
	o := c.opts
	aof, fsync := "no", "everysec"
	if o.AOF {
		aof = "yes"
	}
	if o.FsyncAlways {
		fsync = "always"
	}
	pidFile, err := redisPidFile(dir)
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", fsync,
		"--maxmemory-policy", "noeviction", "--protected-mode", "yes",
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no", "--pidfile", pidFile,
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(ports[1]),
		"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
		// A replica fails over however long it was out of touch: tests kill masters on purpose.
		"--cluster-replica-validity-factor", "0",
		// A replica's full sync starts at once, not 5 s later in case more replicas come: a
		// test waits for it when the cluster starts and when a killed master rejoins.
		"--repl-diskless-sync-delay", "0"}
	if o.Debug {
		args = append(args, "--enable-debug-command", "local")
	}
	node := &ClusterNode{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), Dir: dir, BusPort: ports[1], args: append([]string{bin}, args...)}
	if err := node.start(); err != nil {
		return nil, err
	}
	return node, nil
}

// start runs the node's redis-server and waits until it answers PING.
func (n *ClusterNode) start() error {
	p, err := start("redis", nil, n.args[0], n.args[1:]...)
	if err != nil {
		return err
	}
	if err := waitTCP(n.Addr, 10*time.Second); err != nil {
		p.Kill()
		return fmt.Errorf("redis cluster node %s did not come up: %w: %s", n.Addr, err, p.Output())
	}
	if err := waitPong(n.Addr, "", 5*time.Minute); err != nil {
		p.Kill()
		return err
	}
	n.Process = p
	return nil
}

// Restart starts a stopped or killed node again, with its data directory and its place in the
// cluster (nodes.conf): it rejoins as the role the cluster gives it.
func (n *ClusterNode) Restart() error {
	if n.Process != nil && !n.Exited() {
		return fmt.Errorf("redis cluster node %s is running", n.Addr)
	}
	return n.start()
}

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
	var b strings.Builder
	b.WriteString("redis-cluster://" + addrs[0])
	for i, a := range addrs[1:] {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString("addr=" + a)
	}
	return b.String()
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
		if n.Process == nil || n.Exited() {
			continue
		}
		text, err := command(n.Addr, "CLUSTER", "NODES")
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
	deadline := time.Now().Add(within)
	for {
		why := c.notOK()
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis cluster not ready after %s: %s", within, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// notOK says what keeps the cluster from being ready, "" when nothing does.
func (c *RedisCluster) notOK() string {
	for _, n := range c.Nodes {
		if n.Process == nil || n.Exited() {
			continue
		}
		info, err := command(n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Sprintf("%s: %v", n.Addr, err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384",
			"cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))} {
			if !strings.Contains(info, want+"\r\n") {
				return fmt.Sprintf("%s: no %s in CLUSTER INFO", n.Addr, want)
			}
		}
		repl, err := command(n.Addr, "INFO", "replication")
		if err != nil {
			return fmt.Sprintf("%s: %v", n.Addr, err)
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Sprintf("%s: replica not in sync with its master", n.Addr)
		}
	}
	return ""
}

// readIDs learns every node's cluster id from its own CLUSTER MYID.
func (c *RedisCluster) readIDs() error {
	for _, n := range c.Nodes {
		id, err := command(n.Addr, "CLUSTER", "MYID")
		if err != nil {
			return fmt.Errorf("cluster id of %s: %w", n.Addr, err)
		}
		n.ID = strings.TrimSpace(id)
	}
	return nil
}

// Reshard moves slots slots from master from to master to with `redis-cli --cluster reshard`,
// as an operator scales a cluster out: one slot at a time, the source marked MIGRATING and the
// target IMPORTING, its keys moved with MIGRATE in batches while clients keep using them (ASK
// and TRYAGAIN meanwhile), then the slot assigned to its new master everywhere (MOVED after).
func (c *RedisCluster) Reshard(from, to *ClusterNode, slots int) error {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return fmt.Errorf("redis-cli not installed (apt-get install redis-tools): %w", err)
	}
	out, err := exec.Command(cli, "--cluster", "reshard", from.Addr, "--cluster-from", from.ID,
		"--cluster-to", to.ID, "--cluster-slots", strconv.Itoa(slots), "--cluster-yes").CombinedOutput()
	if err != nil {
		// It prints a line per slot: the end says what went wrong.
		return fmt.Errorf("redis-cli --cluster reshard %d slots %s → %s: %w: %s", slots, from.Addr, to.Addr, err, out[max(0, len(out)-2000):])
	}
	return nil
}

// FlushAll empties every master (its replicas follow), keeping the cluster as it is. Tests
// that share one cluster call it between them.
func (c *RedisCluster) FlushAll() error {
	masters, _, err := c.Masters()
	if err != nil {
		return err
	}
	for _, m := range masters {
		if _, err := command(m.Addr, "FLUSHALL"); err != nil {
			return fmt.Errorf("flush %s: %w", m.Addr, err)
		}
	}
	return nil
}

// Close stops every node (SIGTERM, then SIGKILL after a few seconds).
func (c *RedisCluster) Close() {
	for _, n := range c.Nodes {
		if n.Process != nil {
			n.Stop(5 * time.Second)
		}
	}
}

// command sends one command to the Redis at addr and returns its reply: a status, an integer
// or a bulk string as text; an error reply as an error.
func command(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("%s: empty reply", addr)
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("%s: %s", addr, line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("%s: bulk reply %q", addr, line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("%s: unexpected reply %q", addr, line)
}
