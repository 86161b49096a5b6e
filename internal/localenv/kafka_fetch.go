package localenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The Apache Kafka releases the tests run: the newest of the 3.x line (with every old protocol
// version) and of the 4.x line (without the protocol versions KIP-896 removed).
const (
	Kafka3 = "3.9.2"
	Kafka4 = "4.4.0"
)

// KafkaVersions are the releases the suites run against, oldest first.
var KafkaVersions = []string{Kafka3, Kafka4}

// KafkaDist is a release's jars in the cache, ready to run with `java -cp Libs/*`.
type KafkaDist struct {
	Version string
	// Libs holds the jars: the broker, its dependencies and its distribution's logging binding.
	Libs string
	// Jars and Bytes are how many jars Libs holds and their total size.
	Jars  int
	Bytes int64
	// Fetched is how long Maven took to fetch them in this call; zero when they were cached.
	Fetched time.Duration
}

// completeMarker, in a release's cache directory, is written once every jar is in place: a
// fetch that died half way leaves none, and the next one starts over.
const completeMarker = "complete"

// FetchKafka returns the jars of Kafka version, fetched with mvn from Maven Central on first
// use into cache/kafka-<version> (cache empty: the user's cache directory's acv). A lock on
// the cache serialises callers in any process, so a release is fetched once.
func FetchKafka(ctx context.Context, version, cache string) (*KafkaDist, error) {
	bindings, ok := kafkaLogBindings[major(version)]
	if !ok {
		return nil, fmt.Errorf("kafka %s: only the 3.x and 4.x lines are supported", version)
	}
	root, err := filepath.Abs(cache)
	if cache == "" {
		root, err = os.UserCacheDir()
		root = filepath.Join(root, "acv")
	}
	if err != nil {
		return nil, fmt.Errorf("kafka jar cache: %w (set ACV_KAFKA_CACHE)", err)
	}
	dir := filepath.Join(root, "kafka-"+version)
	if d, err := cachedDist(dir, version); err == nil {
		return d, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return nil, fmt.Errorf("fetch kafka %s: mvn not installed (apt-get install maven): %w", version, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "fetch.lock"), 0o644, time.Hour)
	if err != nil {
		return nil, fmt.Errorf("fetch kafka %s: %w", version, err)
	}
	defer unlock()
	// Another process may have fetched it while we waited for the lock.
	if d, err := cachedDist(dir, version); err == nil {
		return d, nil
	}
	start := time.Now()
	_ = os.RemoveAll(dir)
	pom := filepath.Join(dir, "pom.xml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pom, []byte(kafkaPom(version, bindings)), 0o644); err != nil {
		return nil, err
	}
	partial := filepath.Join(dir, "libs.partial")
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", pom,
		"-Dmaven.repo.local="+filepath.Join(root, "m2"),
		"org.apache.maven.plugins:maven-dependency-plugin:"+dependencyPluginVersion+":copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+partial)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fetch kafka %s with maven: %w: %s", version, err, lastChars(string(out), 4000))
	}
	err = os.Rename(partial, filepath.Join(dir, "libs"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, completeMarker), []byte(version+"\n"), 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch kafka %s: %w", version, err)
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
// ships (reload4j for 3.x, log4j2 for 4.x): without one the broker logs nothing.
var kafkaLogBindings = map[string][]string{
	"3": {"org.slf4j:slf4j-reload4j:1.7.36", "ch.qos.reload4j:reload4j:1.2.25"},
	"4": {"org.apache.logging.log4j:log4j-slf4j-impl:2.25.5", "org.apache.logging.log4j:log4j-core:2.25.5",
		"org.apache.logging.log4j:log4j-api:2.25.5", "org.apache.logging.log4j:log4j-1.2-api:2.25.5"},
}

func major(version string) string {
	m, _, _ := strings.Cut(version, ".")
	return m
}

// kafkaPom is a pom whose runtime dependencies are the broker of version and bindings.
func kafkaPom(version string, bindings []string) string {
	var deps strings.Builder
	for _, d := range append([]string{"org.apache.kafka:kafka_2.13:" + version}, bindings...) {
		p := strings.Split(d, ":")
		fmt.Fprintf(&deps, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n", p[0], p[1], p[2])
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

func lastChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
