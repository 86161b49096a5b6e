package localenv

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RedisOptions shape a redis-server.
type RedisOptions struct {
	// AOF turns on the append-only file with fsync every second, as production runs.
	AOF bool
	// Port to listen on; 0 picks a free one.
	Port int
	// Debug allows the DEBUG command from loopback, for tests that make Redis reload its
	// dataset (DEBUG RELOAD) to see how the service answers while Redis is LOADING.
	Debug bool
	// FsyncAlways makes the append-only file fsync every write before Redis answers it
	// (appendfsync always) instead of once a second: no acknowledged write is lost to a host
	// crash, at the cost the benchmark reports.
	FsyncAlways bool
	// ReplicaOf, "host:port", starts the server as a replica of that master.
	ReplicaOf string
}

// Redis is a running redis-server.
type Redis struct {
	*Process
	Addr string
	Dir  string
}

// StartRedis starts redis-server with its data in dir, on loopback only, with noeviction so
// no code state or outbox entry is ever dropped for memory.
func StartRedis(dir string, o RedisOptions) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not installed (apt-get install redis-server): %w", err)
	}
	if err := mkdirFor(dir, nil); err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	aof := "no"
	if o.AOF {
		aof = "yes"
	}
	fsync := "everysec"
	if o.FsyncAlways {
		fsync = "always"
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", fsync,
		"--maxmemory-policy", "noeviction", "--protected-mode", "yes",
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no"}
	if o.Debug {
		args = append(args, "--enable-debug-command", "local")
	}
	if o.ReplicaOf != "" {
		host, port, found := strings.Cut(o.ReplicaOf, ":")
		if !found {
			return nil, fmt.Errorf("replica of %q: want host:port", o.ReplicaOf)
		}
		args = append(args, "--replicaof", host, port)
	}
	pidFile, err := redisPidFile(dir)
	if err != nil {
		return nil, err
	}
	args = append(args, "--pidfile", pidFile)
	p, err := start("redis", nil, bin, args...)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitTCP(addr, 10*time.Second); err != nil {
		p.Kill()
		return nil, fmt.Errorf("redis did not come up: %w", err)
	}
	if err := waitPong(addr, 5*time.Minute); err != nil {
		p.Kill()
		return nil, err
	}
	return &Redis{Process: p, Addr: addr, Dir: dir}, nil
}

// waitPong waits until Redis answers PING with PONG: while it replays its append-only file it
// accepts connections but answers LOADING.
func waitPong(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		reply, err := ping(addr)
		if err == nil && reply == "+PONG" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis at %s not ready after %s: %q %v", addr, within, reply, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ping(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}
