package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The Apache Kafka releases the tests run: the newest of the 3.x line (the last with
// ZooKeeper, and with every old protocol version) and the newest of the 4.x line (KRaft only,
// without the protocol versions KIP-896 removed), as Maven Central listed them
// (org.apache.kafka:kafka_2.13, maven-metadata.xml).
const (
	Kafka3 = "3.9.2"
	Kafka4 = "4.4.0"
)

// KafkaVersions are the releases the suites run against, oldest first.
var KafkaVersions = []string{Kafka3, Kafka4}

// KafkaDist is a release's jars in the cache, ready to run with `java -cp Libs/*`.
type KafkaDist struct {
	Version string
	// Libs is the directory holding the jars: the broker, its dependencies and the logging
	// binding its own distribution ships.
	Libs string
	// Jars and Bytes are how many jars Libs holds and their total size.
	Jars  int
	Bytes int64
	// Fetched is how long Maven took to fetch them in this call; zero when they were cached.
	Fetched time.Duration
}

// jarCache is the root of the jar cache: dir, else the user's cache directory's acv. Each
// release has its own directory in it, kafka-<version>, that every later run reuses.
func jarCache(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kafka jar cache: %w (set ACV_KAFKA_CACHE)", err)
	}
	return filepath.Join(d, "acv"), nil
}

// completeMarker, in a release's cache directory, is written only once every jar is in
// place: a fetch that died half way leaves no marker, and the next one starts over.
const completeMarker = "complete"

// FetchKafka returns the jars of Kafka version, fetching them from Maven Central on first use
// (`mvn dependency:copy-dependencies` of a generated pom depending on
// org.apache.kafka:kafka_2.13) into the jar cache in cache (empty: the user's, see
// jarCache). Concurrent callers, in this process or others (several test binaries at once),
// are serialised by a lock on the cache, so a release is fetched once and never read
// half-written. It needs java and mvn on the PATH.
func FetchKafka(ctx context.Context, version, cache string) (*KafkaDist, error) {
	bindings, ok := kafkaLogBindings[major(version)]
	if !ok {
		return nil, fmt.Errorf("kafka %s: only the 3.x and 4.x lines are supported", version)
	}
	root, err := jarCache(cache)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "kafka-"+version)
	if d, err := cachedDist(dir, version); err == nil {
		return d, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return nil, fmt.Errorf("fetch kafka %s: mvn not installed (apt-get install maven): %w", version, err)
	}
	unlock, err := lockWait(ctx, filepath.Join(root, "fetch.lock"))
	if err != nil {
		return nil, fmt.Errorf("fetch kafka %s: %w", version, err)
	}
	defer unlock()
	// Another process may have fetched it while we waited for the lock.
	if d, err := cachedDist(dir, version); err == nil {
		return d, nil
	}
	start := time.Now()
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	pom := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pom, []byte(kafkaPom(version, bindings)), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", pom, err)
	}
	partial := filepath.Join(dir, "libs.partial")
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", pom,
		"-Dmaven.repo.local="+filepath.Join(root, "m2"),
		"org.apache.maven.plugins:maven-dependency-plugin:"+dependencyPluginVersion+":copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+partial)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fetch kafka %s with maven: %w: %s", version, err, lastChars(string(out), 4000))
	}
	if err := os.Rename(partial, filepath.Join(dir, "libs")); err != nil {
		return nil, fmt.Errorf("fetch kafka %s: %w", version, err)
	}
	if err := os.WriteFile(filepath.Join(dir, completeMarker), []byte(version+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("fetch kafka %s: mark complete: %w", version, err)
	}
	d, err := cachedDist(dir, version)
	if err != nil {
		return nil, err
	}
	d.Fetched = time.Since(start)
	return d, nil
}

// dependencyPluginVersion is the maven-dependency-plugin that copies the jars; pinned so the
// fetch does not depend on what the installed Maven defaults to.
const dependencyPluginVersion = "3.8.1"

// kafkaLogBindings are, per major version, the logging jars the release's own distribution
// puts next to the broker: slf4j over reload4j (log4j 1) for 3.x, log4j2 for 4.x. Without one
// the broker logs nothing.
var kafkaLogBindings = map[string][]string{
	"3": {"org.slf4j:slf4j-reload4j:1.7.36", "ch.qos.reload4j:reload4j:1.2.25"},
	"4": {"org.apache.logging.log4j:log4j-slf4j-impl:2.25.5", "org.apache.logging.log4j:log4j-core:2.25.5",
		"org.apache.logging.log4j:log4j-api:2.25.5", "org.apache.logging.log4j:log4j-1.2-api:2.25.5"},
}

// major is the major version of a release ("4" of "4.4.0").
func major(version string) string {
	m, _, _ := strings.Cut(version, ".")
	return m
}

// kafkaPom is a pom whose runtime dependencies are the broker of version and the logging
// bindings.
func kafkaPom(version string, bindings []string) string {
	var deps strings.Builder
	dep := func(g, a, v string) {
		fmt.Fprintf(&deps, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n", g, a, v)
	}
	dep("org.apache.kafka", "kafka_2.13", version)
	for _, b := range bindings {
		p := strings.Split(b, ":")
		dep(p[0], p[1], p[2])
	}
	return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>acv.localenv</groupId>
  <artifactId>kafka-jars</artifactId>
  <version>` + version + `</version>
  <packaging>pom</packaging>
  <dependencies>
` + deps.String() + `  </dependencies>
</project>
`
}

// cachedDist describes a release's complete cache directory, or fails when it is not complete.
func cachedDist(dir, version string) (*KafkaDist, error) {
	if _, err := os.Stat(filepath.Join(dir, completeMarker)); err != nil {
		return nil, err
	}
	libs := filepath.Join(dir, "libs")
	ents, err := os.ReadDir(libs)
	if err != nil {
		return nil, err
	}
	d := &KafkaDist{Version: version, Libs: libs}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jar") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		d.Jars++
		d.Bytes += fi.Size()
	}
	if d.Jars == 0 {
		return nil, fmt.Errorf("%s holds no jar", libs)
	}
	return d, nil
}

// lockWait takes an exclusive flock on path, waiting for another holder until ctx ends. The
// kernel drops it when the holder dies, however it dies.
func lockWait(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastChars is the last n bytes of s, for error messages.
func lastChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
