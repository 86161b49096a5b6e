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

// PasswordFile is the password kept in the file at path, made on first use (32 random bytes in
// hex, mode 0600), so every start of the server it protects uses the same one.
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

// newPasswordFile writes a fresh password to a new file at path; of two first starts racing for
// it (they cannot: the data directory is locked), both read the winner's.
func newPasswordFile(path string) (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("make password: %w", err)
	}
	pw := hex.EncodeToString(buf)
	tmp, err := writeTemp(path, []byte(pw+"\n"), 0o600, nil)
	if err == nil {
		// A link, not a rename: a file someone else made meanwhile is kept.
		err = os.Link(tmp, path)
		os.Remove(tmp)
	}
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

// writeFileAtomic replaces the file at path with data (mode perm, owned by cred's user when set)
// through a file beside it that is renamed in.
func writeFileAtomic(path string, data []byte, perm os.FileMode, cred *syscall.Credential) error {
	tmp, err := writeTemp(path, data, perm, cred)
	if err == nil {
		if err = os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data to a new file of mode perm beside path, synced, and returns its name.
func writeTemp(path string, data []byte, perm os.FileMode, cred *syscall.Credential) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && cred != nil {
		err = f.Chown(int(cred.Uid), int(cred.Gid))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
