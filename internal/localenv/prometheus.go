package localenv

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PrometheusBin is where Debian's prometheus package installs the server.
const PrometheusBin = "/usr/bin/prometheus"

// Prometheus is a prometheus server started by StartPrometheus.
type Prometheus struct {
	*Process
	// Addr is the loopback address it serves its UI and API on; URL is http://Addr.
	Addr, URL string
	// Dir holds its configuration (prometheus.yml) and its data (data/).
	Dir string
}

// PrometheusOptions configure StartPrometheus.
type PrometheusOptions struct {
	// Addr is the address to serve on. When it is busy by the time the server binds it, a free
	// loopback port is taken instead (twice at most).
	Addr string
	// Config renders the configuration for the address the server will serve on (a scrape of
	// itself names it). JSON is YAML, so encoding/json may render it.
	Config func(addr string) ([]byte, error)
}

// PrometheusBinary is the prometheus server of the machine: PrometheusBin, else the first on
// PATH.
func PrometheusBinary() (string, error) {
	if fi, err := os.Stat(PrometheusBin); err == nil && !fi.IsDir() {
		return PrometheusBin, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	return "", errors.New("the prometheus server is not installed (apt-get install prometheus)")
}

// StartPrometheus runs the prometheus server with its configuration and data in dir, serving on
// o.Addr (or a free port), once a server a dead run left on dir is stopped.
func StartPrometheus(dir string, o PrometheusOptions) (*Prometheus, error) {
	bin, err := PrometheusBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	pidFile := filepath.Join(dir, "prometheus.pid")
	if err := stopStale(pidFile, filepath.Base(bin), syscall.SIGTERM, 15*time.Second); err != nil {
		return nil, err
	}
	addr := o.Addr
	for attempt := 0; ; attempt++ {
		p, err := startPrometheus(bin, dir, addr, o.Config)
		if err == nil {
			if werr := os.WriteFile(pidFile, []byte(strconv.Itoa(p.Pid())+"\n"), 0o644); werr != nil {
				p.Stop(10 * time.Second)
				return nil, werr
			}
			return p, nil
		}
		if !strings.Contains(err.Error(), addrInUse) || attempt == 2 {
			return nil, err
		}
		if addr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
}

// addrInUse is how a server's output, and startPrometheus' errors, say its address is taken.
const addrInUse = "address already in use"

func startPrometheus(bin, dir, addr string, config func(string) ([]byte, error)) (*Prometheus, error) {
	cfg, err := config(addr)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	url := "http://" + addr
	hc := &http.Client{Timeout: 2 * time.Second}
	// Replaying a large write-ahead log takes a while.
	proc, err := startReady(context.Background(), "prometheus on "+addr, nil, 2*time.Minute, func() error {
		r, err := hc.Get(url + "/-/ready")
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			return errors.New(r.Status)
		}
		// The answer may come from another server that held the address all along.
		if configFile(hc, url) != cfgPath {
			return giveUp{errors.New("another server answers there: " + addrInUse)}
		}
		return nil
	}, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		return nil, err
	}
	return &Prometheus{Process: proc, Addr: addr, URL: url, Dir: dir}, nil
}

// configFile is the --config.file of the prometheus server at base, "" when it does not say.
func configFile(hc *http.Client, base string) string {
	r, err := hc.Get(base + "/api/v1/status/flags")
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	var body struct {
		Data map[string]string `json:"data"`
	}
	if json.NewDecoder(r.Body).Decode(&body) != nil {
		return ""
	}
	return body.Data["config.file"]
}
