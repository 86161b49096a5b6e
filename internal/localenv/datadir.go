package localenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ExternalPGRoot is where PostgresDataDir keeps a cluster the postgres user cannot reach in the
// data directory.
var ExternalPGRoot = "/var/lib/acv"

// PostgresDataDir is the PostgreSQL data directory of the acv data directory home: home/pg when
// the server's user can reach it (as root it runs as postgres, which cannot traverse /root),
// else pg-<hash of home> under ExternalPGRoot or the temporary directory, recorded in
// home/pg.location so restarts use the same cluster.
func PostgresDataDir(home string) (string, error) {
	loc := filepath.Join(home, "pg.location")
	if b, err := os.ReadFile(loc); err == nil {
		if d := strings.TrimSpace(string(b)); d != "" {
			return d, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	inside := filepath.Join(home, "pg")
	cred, err := pgCredential()
	if err != nil {
		return "", err
	}
	if cred == nil || CanTraverse(home, int(cred.Uid), pgGroups()) {
		return inside, nil
	}
	if _, err := os.Stat(filepath.Join(inside, "PG_VERSION")); err == nil {
		return "", fmt.Errorf("the postgres user cannot reach the cluster in %s: make its parent directories traversable (chmod o+x) or move it", inside)
	}
	sum := sha256.Sum256([]byte(home))
	name := "pg-" + hex.EncodeToString(sum[:8])
	var dir string
	for _, root := range []string{ExternalPGRoot, filepath.Join(os.TempDir(), "acv")} {
		if err := os.MkdirAll(root, 0o755); err != nil {
			continue
		}
		if err := os.Chmod(root, 0o755); err != nil {
			continue
		}
		if CanTraverse(root, int(cred.Uid), pgGroups()) {
			dir = filepath.Join(root, name)
			break
		}
	}
	if dir == "" {
		return "", fmt.Errorf("no directory the postgres user can reach for the cluster of %s (tried %s and %s)", home, ExternalPGRoot, filepath.Join(os.TempDir(), "acv"))
	}
	if err := os.WriteFile(loc, []byte(dir+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("record the cluster's location: %w", err)
	}
	return dir, nil
}

func pgGroups() []int {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil
	}
	ids, _ := u.GroupIds() // the primary group among them
	var gs []int
	for _, s := range ids {
		if g, err := strconv.Atoi(s); err == nil {
			gs = append(gs, g)
		}
	}
	return gs
}

// CanTraverse tells whether a user uid in groups may search (x) every directory from / down to
// and including dir, by the directories' mode bits.
func CanTraverse(dir string, uid int, groups []int) bool {
	dir = filepath.Clean(dir)
	for p := dir; ; p = filepath.Dir(p) {
		if !searchable(p, uid, groups) {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

func searchable(p string, uid int, groups []int) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || uid == 0 {
		return true
	}
	mode := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		return mode&0o100 != 0
	case slices.Contains(groups, int(st.Gid)):
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}
