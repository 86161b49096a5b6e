package localenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// RedisOptions shape a redis-server.
type RedisOptions struct {
	// AOF turns on the append-only file with fsync every second, as production runs.
	AOF bool
	// Port to listen on; 0 picks a free one.
	Port int
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
	p, err := start("redis", nil, bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", "everysec",
		"--maxmemory-policy", "noeviction", "--protected-mode", "yes",
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitTCP(addr, 10*time.Second); err != nil {
		p.Kill()
		return nil, fmt.Errorf("redis did not come up: %w", err)
	}
	return &Redis{Process: p, Addr: addr, Dir: dir}, nil
}
