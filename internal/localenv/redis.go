package localenv

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
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
	// Password, when set, is required of every client (requirepass; a replica gives it to its
	// master too). It goes into dir/auth.conf, mode 0600, which the server reads at start, not
	// onto its command line, which every local user may read. See PasswordFile.
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
	var args []string
	if o.Password != "" {
		conf, err := writeRedisAuth(dir, o.Password)
		if err != nil {
			return nil, err
		}
		// The configuration file comes first, the options after it.
		args = append(args, conf)
	}
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", fsync,
		"--maxmemory-policy", "noeviction", "--protected-mode", "yes",
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
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
	if err := waitPong(addr, o.Password, 5*time.Minute); err != nil {
		p.Kill()
		return nil, err
	}
	return &Redis{Process: p, Addr: addr, Dir: dir, password: o.Password}, nil
}

// writeRedisAuth writes the configuration file that sets the server's password, readable by its
// owner only, and returns its path.
func writeRedisAuth(dir, password string) (string, error) {
	if err := checkPassword(password); err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	conf := filepath.Join(dir, "auth.conf")
	// checkPassword admits no character a quoted redis.conf value would have to escape.
	body := fmt.Sprintf("# Written by acv (internal/localenv) on every start.\nrequirepass \"%s\"\nmasterauth \"%s\"\n", password, password)
	if err := writePrivateFile(conf, []byte(body), nil); err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	return conf, nil
}

// waitPong waits until Redis answers PING with PONG: while it replays its append-only file it
// accepts connections but answers LOADING. password, when set, is given first (AUTH).
func waitPong(addr, password string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		reply, err := ping(addr, password)
		if err == nil && reply == "+PONG" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis at %s not ready after %s: %q %v", addr, within, reply, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ping(addr, password string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	r := bufio.NewReader(c)
	if password != "" {
		if _, err := c.Write([]byte("AUTH " + password + "\r\n")); err != nil {
			return "", err
		}
		if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "+OK" {
			return strings.TrimSpace(line), err
		}
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}
