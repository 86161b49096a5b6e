package localenv

import (
	"os"
	"strings"
)

// StatFields reads a /proc stat file (/proc/<pid>/stat, or a thread's under task/) and gives
// its fields after the command name, the state (field 3) first, so that field n is at index
// n-3. The command name may hold spaces and parentheses; every later field follows its last
// ')'. ok is false when the file cannot be read or holds no such part.
func StatFields(path string) (fields []string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) > 0
}
