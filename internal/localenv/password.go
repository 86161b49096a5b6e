package localenv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// PasswordFile is the password kept in the file at path, made on first use: 32 random bytes in
// hex, written to a new file of mode 0600, so every later start of the server it protects
// (RedisOptions.Password, PostgresOptions.Password) uses the same one. A file that other users
// may read is made private again.
func PasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newPasswordFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	pw := strings.TrimSpace(string(b))
	if err := checkPassword(pw); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return pw, nil
}

// newPasswordFile writes a fresh password to a new file at path. Two first starts racing for it
// (they cannot: the data directory is locked) would both read the winner's.
func newPasswordFile(path string) (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("make password: %w", err)
	}
	pw := hex.EncodeToString(buf)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return "", fmt.Errorf("write password: %w", err)
	}
	_, err = tmp.WriteString(pw + "\n")
	if serr := tmp.Sync(); err == nil {
		err = serr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// A link, not a rename: a file someone else made meanwhile is kept, not replaced.
		err = os.Link(tmp.Name(), path)
	}
	os.Remove(tmp.Name())
	if errors.Is(err, os.ErrExist) {
		return PasswordFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("write password: %w", err)
	}
	return pw, nil
}

// checkPassword accepts the passwords this package writes into URLs, redis.conf and SQL without
// escaping worries: 16 to 128 characters a URL leaves unescaped (letters, digits, - . _ ~).
func checkPassword(pw string) error {
	if len(pw) < 16 || len(pw) > 128 {
		return fmt.Errorf("password of %d characters: want 16 to 128", len(pw))
	}
	for _, c := range pw {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("-._~", c):
		default:
			return fmt.Errorf("password holds %q: want letters, digits and - . _ ~ only", c)
		}
	}
	return nil
}

// writePrivateFile replaces the file at path with data, readable by its owner only: owned by
// cred's user when cred is set (the postgres user of a server run as root), else by us. The
// content is written aside and renamed in, so the server never reads half of it.
func writePrivateFile(path string, data []byte, cred *syscall.Credential) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil && cred != nil {
		err = tmp.Chown(int(cred.Uid), int(cred.Gid))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
