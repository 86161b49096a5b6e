package localenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A registered scrape target is a file_sd file naming the address, there while its process
// lives: removed by its owner, and pruned by the next registration once the process is gone
// (a load generator killed with kill -9).
func TestScrapeTargetsLiveWithTheirProcess(t *testing.T) {
	dir := t.TempDir()
	remove, err := RegisterScrapeTarget(dir, "acvload", "127.0.0.1:9101", map[string]string{"run": "a"})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("%d target files, want 1", len(files))
	}
	b, _ := os.ReadFile(files[0])
	var groups []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(b, &groups); err != nil || len(groups) != 1 || groups[0].Targets[0] != "127.0.0.1:9101" || groups[0].Labels["run"] != "a" {
		t.Fatalf("target file %s: %s (%v)", files[0], b, err)
	}
	// A file of a process that has ended.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "acvload-"+strconv.Itoa(dead.Process.Pid)+"-1.json")
	if err := os.WriteFile(stale, b, 0o644); err != nil {
		t.Fatal(err)
	}
	PruneScrapeTargets(dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the target of an ended process survived pruning: %v", err)
	}
	if _, err := os.Stat(files[0]); err != nil {
		t.Errorf("pruning removed the target of a live process: %v", err)
	}
	remove()
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left after remove: %v", left)
	}
}
