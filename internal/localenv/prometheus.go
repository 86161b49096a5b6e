package localenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// RegisterScrapeTarget makes the metrics listener addr of this process known to a Prometheus
// reading dir/*.json (file_sd_configs), as `acv dev --prometheus`'s does, so a load
// generator's run shows beside the service. remove deletes the file; one left by a killed
// process is deleted by the next RegisterScrapeTarget or PruneScrapeTargets.
func RegisterScrapeTarget(dir, name, addr string, labels map[string]string) (remove func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	PruneScrapeTargets(dir)
	me, err := processIdentity(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	pid, start, _ := strings.Cut(me, " ")
	path := filepath.Join(dir, name+"-"+pid+"-"+start+".json")
	if labels == nil {
		labels = map[string]string{}
	}
	b, err := json.Marshal([]map[string]any{{"targets": []string{addr}, "labels": labels}})
	if err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	// Renamed in, so Prometheus never reads half a file; the aside name does not match *.json.
	if err := writeFileAtomic(path, append(b, '\n'), 0o644, nil); err != nil {
		return nil, fmt.Errorf("scrape target: %w", err)
	}
	return func() { os.Remove(path) }, nil
}

// PruneScrapeTargets deletes the target files in dir (RegisterScrapeTarget's) of processes that
// no longer run, so Prometheus does not keep scraping a load generator that was killed.
func PruneScrapeTargets(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-")
		if len(parts) < 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[len(parts)-2])
		if err != nil {
			continue
		}
		if now, err := processIdentity(pid); err == nil && now == parts[len(parts)-2]+" "+parts[len(parts)-1] {
			continue
		}
		os.Remove(f)
	}
}
