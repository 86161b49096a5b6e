package loadgen

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/acv/acv/internal/safecsv"
)

// Code is one row of the CSV `acv codes export` writes (id,code,state,...): the scenarios
// verify, reactivate and read codes by these values and check the answers against them.
type Code struct {
	ID, Value, State string
}

// ReadCodesFile reads the export at path (see ReadCodes).
func ReadCodesFile(path string) ([]Code, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open codes: %w", err)
	}
	defer f.Close()
	codes, err := ReadCodes(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return codes, nil
}

// ReadCodes reads an export of `acv codes export`: a header id,code,state,... and one row a
// code, cells escaped as every export escapes them (safecsv), so a code such as =X, which the
// export writes '=X, reads as =X.
func ReadCodes(r io.Reader) ([]Code, error) {
	cr := safecsv.NewReader(r)
	head, err := cr.Read()
	if err != nil || len(head) < 3 || head[0] != "id" || head[1] != "code" || head[2] != "state" {
		return nil, errors.New("not an export of `acv codes export` (header id,code,state,...)")
	}
	var out []Code
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read codes: %w", err)
		}
		if len(rec) >= 3 {
			out = append(out, Code{ID: rec[0], Value: rec[1], State: rec[2]})
		}
	}
}

// SelectCodes keeps the codes whose value starts with prefix (every code when it is empty) and,
// when states are given, whose state is one of them: one export feeds several scenarios, each
// on codes of its own prefix.
func SelectCodes(codes []Code, prefix string, states ...string) []Code {
	var out []Code
	for _, c := range codes {
		if !strings.HasPrefix(c.Value, prefix) {
			continue
		}
		if len(states) > 0 && !slices.Contains(states, c.State) {
			continue
		}
		out = append(out, c)
	}
	return out
}
