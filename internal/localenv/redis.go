package localenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions shape a redis-server.
type RedisOptions struct {
	// AOF turns on the append-only file with fsync every second, as production runs.
	AOF bool
	// Debug allows the DEBUG command from loopback (DEBUG RELOAD, for tests of LOADING).
	Debug bool
	// FsyncAlways fsyncs the append-only file before Redis answers a write (appendfsync always).
	FsyncAlways bool
	// ReplicaOf, "host:port", starts the server as a replica of that master.
	ReplicaOf string
	// Password, when set, is required of every client (requirepass; masterauth for a replica),
	// written to dir/auth.conf (0600), not onto the command line.
	Password string
}

// Redis is a running redis-server.
type Redis struct {
	*Process
	Addr     string
	Dir      string
	password string
}

// URL is the server's redis:// URL (database 0), with its password when it has one.
func (r *Redis) URL() string {
	u := url.URL{Scheme: "redis", Host: r.Addr, Path: "/0"}
	if r.password != "" {
		u.User = url.UserPassword("", r.password)
	}
	return u.String()
}

// StartRedis starts redis-server with its data in dir, on loopback only, with noeviction so
// no code state or outbox entry is dropped for memory, and returns once it answers PING.
func StartRedis(dir string, o RedisOptions) (*Redis, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p, err := startRedis(dir, port, o)
	if err != nil {
		return nil, err
	}
	return &Redis{Process: p, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, password: o.Password}, nil
}

// startRedis runs redis-server with o and extra options and waits until it answers PING. A
// server a dead run left on dir is stopped first (SIGTERM: it fsyncs its AOF).
func startRedis(dir string, port int, o RedisOptions, extra ...string) (*Process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not installed (apt-get install redis-server): %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var args []string
	if o.Password != "" {
		conf, err := writeRedisAuth(dir, o.Password)
		if err != nil {
			return nil, err
		}
		args = append(args, conf) // the configuration file comes before the options
	}
	aof, fsync := "no", "everysec"
	if o.AOF {
		aof = "yes"
	}
	if o.FsyncAlways {
		fsync = "always"
	}
	pidFile := filepath.Join(dir, "redis.pid")
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", fsync,
		"--maxmemory-policy", "noeviction", "--protected-mode", "yes",
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no", "--pidfile", pidFile)
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
	if err := stopStale(pidFile, "redis-server", syscall.SIGTERM, 10*time.Second); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// While it replays its append-only file, Redis answers LOADING.
	return startReady(context.Background(), "redis at "+addr, nil, 5*time.Minute, func() error {
		_, err := command(addr, o.Password, "PING")
		return err
	}, bin, append(args, extra...)...)
}

// writeRedisAuth writes the configuration file (mode 0600) that sets the password, and returns
// its path.
func writeRedisAuth(dir, password string) (string, error) {
	if err := checkPassword(password); err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	conf := filepath.Join(dir, "auth.conf")
	// checkPassword admits no character a quoted redis.conf value would have to escape.
	body := fmt.Sprintf("# Written by acv (internal/localenv) on every start.\nrequirepass \"%s\"\nmasterauth \"%s\"\n", password, password)
	if err := writeFileAtomic(conf, []byte(body), 0o600, nil); err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	return conf, nil
}

// command sends one command to the Redis at addr and returns its reply as text.
func command(addr, password string, args ...any) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2, DisableIdentity: true,
		DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, MaxRetries: -1, PoolSize: 1})
	defer rdb.Close()
	return rdb.Do(context.Background(), args...).Text()
}
