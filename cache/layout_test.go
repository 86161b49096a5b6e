package cache

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/redisscript"
)

// The strict reply decoders must refuse anything but the reply their script promises: a wrong
// length, an element of another type or a reply that is no array is an error, never a zero
// value read as a status or a number.
func TestReplyDecodersAreStrict(t *testing.T) {
	type decoder struct {
		name   string
		decode func(v interface{}) (interface{}, error)
		good   []interface{}
		want   interface{}
		kinds  string // per element: 'i' integer, 's' string
	}
	decoders := []decoder{
		{
			name:   "admit.lua",
			decode: func(v interface{}) (interface{}, error) { return decodeBucket(admitScript, v) },
			good:   []interface{}{int64(3), int64(0), int64(999)},
			want:   bucketReply{status: statusRateLimited, rlRemaining: 0, rlWaitMs: 999},
			kinds:  "iii",
		},
		{
			name:   "disable.lua",
			decode: func(v interface{}) (interface{}, error) { return decodeDisable(v) },
			good:   []interface{}{int64(0), int64(1_750_000_000_123), "till-7", int64(5)},
			want:   disableReply{status: statusOK, verifiedAtMs: 1_750_000_000_123, verifiedBy: "till-7", version: 5},
			kinds:  "iisi",
		},
	}
	notArrays := []interface{}{nil, int64(0), int64(1), "OK", map[interface{}]interface{}{}, true}

	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			if len(d.kinds) != len(d.good) {
				t.Fatal("test table: kinds and reply differ in length")
			}
			got, err := d.decode(copyReply(d.good))
			if err != nil || !reflect.DeepEqual(got, d.want) {
				t.Fatalf("well-formed reply: %+v, %v; want %+v", got, err, d.want)
			}
			refuse := func(what string, v interface{}) {
				t.Helper()
				got, err := d.decode(v)
				if err == nil {
					t.Errorf("%s (%#v): decoded %+v without an error", what, v, got)
				} else if !strings.Contains(err.Error(), strings.TrimSuffix(d.name, ".lua")) {
					t.Errorf("%s: error %q does not name the script", what, err)
				}
			}
			// Wrong lengths.
			refuse("empty array", []interface{}{})
			refuse("one element short", copyReply(d.good[:len(d.good)-1]))
			refuse("one element too many", append(copyReply(d.good), int64(0)))
			refuse("twice as long", append(copyReply(d.good), d.good...))
			// Not an array at all.
			for _, v := range notArrays {
				refuse("not an array", v)
			}
			// Every element replaced by each value of a wrong type.
			for i, k := range d.kinds {
				var wrong []interface{}
				switch k {
				case 'i':
					// A numeric string is still a string: the decoder must not parse it.
					wrong = []interface{}{strconv.FormatInt(asInt(d.good[i]), 10), "", nil, []interface{}{int64(1)}, true, 1.0}
				case 's':
					wrong = []interface{}{int64(0), int64(7), nil, []interface{}{"x"}, true}
				}
				for _, w := range wrong {
					v := copyReply(d.good)
					v[i] = w
					refuse("element "+strconv.Itoa(i+1)+" of a wrong type", v)
				}
			}
		})
	}

	t.Run("status replies", func(t *testing.T) {
		for v, want := range map[status]bool{statusOK: true, statusUnchanged: false} {
			got, err := decodeDone(putCodeScript, []interface{}{int64(v)})
			if err != nil || got != want {
				t.Fatalf("decodeDone(%d) = %v, %v; want %v", v, got, err, want)
			}
		}
		for _, v := range []interface{}{int64(0), int64(1), "1", "0", "", nil, true, []interface{}{int64(statusCodeMiss)},
			[]interface{}{int64(9)}, []interface{}{int64(0), int64(0)}, []interface{}{"0"}, []interface{}{}, 1.0} {
			got, err := decodeDone(putCodeScript, v)
			if err == nil {
				t.Errorf("decodeDone(%#v) = %v without an error", v, got)
			} else if !strings.Contains(err.Error(), "acv_putcode") {
				t.Errorf("decodeDone(%#v): error %q does not name the script", v, err)
			}
			if got {
				t.Errorf("decodeDone(%#v) reported done on a bad reply", v)
			}
		}
	})
}

func copyReply(v []interface{}) []interface{} { return append([]interface{}(nil), v...) }

func asInt(v interface{}) int64 { n, _ := v.(int64); return n }

// embeddedScripts is every script the package embeds, by file name.
func embeddedScripts() map[string]string {
	files, err := scriptFiles.ReadDir("scripts")
	if err != nil {
		panic(err)
	}
	m := map[string]string{}
	for _, f := range files {
		m[f.Name()] = scriptSrc(f.Name())
	}
	return m
}

// preludeLocals parses luaConstants into its names and values (strings unquoted, numbers as
// their text), failing on any line that is not one simple local definition.
func preludeLocals(t *testing.T) (names []string, values map[string]string) {
	t.Helper()
	line := regexp.MustCompile(`^local ([A-Z][A-Z0-9_]*) = (?:'([^'\\]*)'|(-?[0-9]+))$`)
	values = map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(luaConstants(), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("prelude line %q is not a simple local definition", l)
		}
		if _, dup := values[m[1]]; dup {
			t.Fatalf("prelude defines %s twice", m[1])
		}
		names = append(names, m[1])
		values[m[1]] = m[2] + m[3]
	}
	return names, values
}

// The prelude defines each field name and status once, with the values layout.go declares, and
// the hot-path scripts are exactly the embedded sources behind that prelude.
func TestLuaPreludeMatchesLayout(t *testing.T) {
	_, got := preludeLocals(t)
	want := map[string]string{
		"F_ID": fCodeID, "F_EXP": fExpiresAt, "F_VAT": fVerifiedAt, "F_BY": fVerifiedBy,
		"F_DIS": fDisabled, "F_VER": fVersion, "F_UNKNOWN": fUnknown, "F_EN": fEnabled,
		"F_TOKENS": fTokens, "F_REFILLED": fRefilled, "F_PSTATE": fProjectState,
		"F_KEY_PROJECT": fKeyProject, "F_KEY_SECRET": fKeySecret, "F_KEY_RATE": fKeyRate,
		"F_KEY_BURST": fKeyBurst, "F_KEY_REVOKED": fKeyRevoked,
	}
	for name, s := range map[string]status{
		"S_OK": statusOK, "S_CODE_MISS": statusCodeMiss, "S_PROJECT_MISS": statusProjectMiss,
		"S_RATE_LIMITED": statusRateLimited, "S_UNCHANGED": statusUnchanged,
		"S_IDEM_CONFLICT": statusIdemConflict, "S_IDEM_REPLAYED": statusIdemReplayed,
	} {
		want[name] = strconv.FormatInt(int64(s), 10)
	}
	want["T_IDEM"] = strconv.FormatInt(int64(IdempotencyTTL/time.Second), 10)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prelude locals\n%v\nwant\n%v", got, want)
	}
	// Two fields with one name would overwrite each other; two statuses with one number could
	// not be told apart.
	for _, prefix := range []string{"F_", "S_", "T_"} {
		by := map[string]string{}
		for name, v := range got {
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			if other, dup := by[v]; dup {
				t.Errorf("%s and %s are both %q", other, name, v)
			}
			by[v] = name
		}
	}
	// Every script is a Redis Function whose library runs the prelude, then registers its file
	// as the function's body, under a name that changes with the source.
	for name, s := range map[string]*redisscript.Script{
		"apply.lua": applyScript, "admit.lua": admitScript, "putcode.lua": putCodeScript,
		"unknown.lua": unknownScript, "disable.lua": disableScript, "putproject.lua": putProjectScript,
		"putkey.lua": putKeyScript, "revokekey.lua": revokeKeyScript, "refund.lua": refundScript,
		"lease.lua": leaseScript, "release.lua": releaseScript,
	} {
		base := "acv_" + strings.TrimSuffix(name, ".lua")
		if want := redisscript.New(base, luaPrelude(), embeddedScripts()[name]); s.Name() != want.Name() || !strings.HasPrefix(s.Name(), base+"_") {
			t.Errorf("%s does not run as the prelude followed by its embedded source", name)
		}
		if other := redisscript.New(base, luaPrelude(), embeddedScripts()[name]+"\n"); other.Name() == s.Name() {
			t.Errorf("another source gives %s the same name", name)
		}
	}
	if len(allScripts) != len(embeddedScripts())-1 {
		t.Errorf("Preload loads %d scripts, the package has %d", len(allScripts), len(embeddedScripts())-1)
	}
}

// Every F_* and S_* name the scripts use is defined by the prelude, and no script spells a
// hash field itself: the field names live only in layout.go.
func TestScriptsUseOnlyPreludeNames(t *testing.T) {
	scripts := embeddedScripts()

	// The embedded sources are all of scripts/*.lua, so no script escapes this test.
	files, err := filepath.Glob(filepath.Join("scripts", "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, embedded []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		onDisk = append(onDisk, name)
		if src, ok := scripts[name]; !ok || src != string(b) {
			t.Errorf("%s is not embedded as it is on disk", p)
		}
	}
	for name := range scripts {
		embedded = append(embedded, name)
	}
	sort.Strings(onDisk)
	sort.Strings(embedded)
	if !reflect.DeepEqual(onDisk, embedded) {
		t.Fatalf("scripts on disk %q, embedded %q", onDisk, embedded)
	}

	names, values := preludeLocals(t)
	used := map[string]bool{}
	ident := regexp.MustCompile(`\b[FST]_[A-Za-z0-9_]+\b`)
	redefined := regexp.MustCompile(`\blocal\s+[FST]_`)
	fieldValues := map[string]bool{}
	for name, v := range values {
		if strings.HasPrefix(name, "F_") {
			fieldValues[v] = true
		}
	}
	for name, src := range scripts {
		// The whole source, comments included: a comment naming an undefined local is stale.
		for _, id := range ident.FindAllString(src, -1) {
			if _, ok := values[id]; !ok {
				t.Errorf("%s uses %s, which the prelude does not define", name, id)
			}
			used[id] = true
		}
		if redefined.MatchString(src) {
			t.Errorf("%s defines its own F_/S_/T_ local", name)
		}
		lits, err := luaStringLiterals(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, lit := range lits {
			if isFieldLiteral(lit, fieldValues) {
				t.Errorf("%s spells the hash field %q itself; use the prelude's F_* local", name, lit)
			}
		}
	}
	for _, n := range names {
		if !used[n] {
			t.Errorf("the prelude defines %s, which no script uses", n)
		}
	}
}

// isFieldLiteral tells whether a Lua string literal looks like a hash field name: one or two
// lowercase letters (every field of layout.go is), or any field name layout.go declares.
func isFieldLiteral(lit string, fieldValues map[string]bool) bool {
	return regexp.MustCompile(`^[a-z]{1,2}$`).MatchString(lit) || fieldValues[lit]
}

// The check above must find what it looks for: a field spelled in code is caught, the same
// text in a comment or inside a longer string (the event JSON's keys) is not.
func TestFieldLiteralCheckFindsFields(t *testing.T) {
	fields := map[string]bool{"h:traceparent": true}
	cases := map[string][]string{
		`redis.call('HGET', KEYS[1], 'z')`:                              {"z"},
		`redis.call("HMGET", KEYS[2], "en", 'x')`:                       {"en", "x"},
		`redis.call('XADD', KEYS[3], '*', 'e', ev, 'h:traceparent', a)`: {"e", "h:traceparent"},
		`local s = [[tk]] .. [==[ts]==]`:                                {"tk", "ts"},
		"-- HSET 'z' in a comment\nlocal a = 1":                         nil,
		"--[[ 'z' in a\nlong comment ]] local a = 1":                    nil,
		`local ev = '{"id":"' .. x .. '","ip":' .. y`:                   nil,
		`redis.call('SET', KEYS[5], '1', 'EX', ttl)`:                    nil,
		`local q = 'it\'s' .. "a \"b\""`:                                nil,
	}
	for src, want := range cases {
		lits, err := luaStringLiterals(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		var got []string
		for _, l := range lits {
			if isFieldLiteral(l, fields) {
				got = append(got, l)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: flagged %q, want %q", src, got, want)
		}
	}
	if _, err := luaStringLiterals(`local a = 'open`); err == nil {
		t.Error("an unterminated string was not reported")
	}
}

// luaStringLiterals returns the raw contents of the string literals of Lua source, skipping
// comments: quoted strings with their escapes, and long brackets [[...]], [=[...]=].
func luaStringLiterals(src string) ([]string, error) {
	var out []string
	longClose := func(i int) (string, int) { // at '[': the closing bracket and the content start
		j := i + 1
		for j < len(src) && src[j] == '=' {
			j++
		}
		if j < len(src) && src[j] == '[' {
			return "]" + strings.Repeat("=", j-i-1) + "]", j + 1
		}
		return "", 0
	}
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case strings.HasPrefix(src[i:], "--"):
			i += 2
			if i < len(src) && src[i] == '[' {
				if end, start := longClose(i); end != "" {
					k := strings.Index(src[start:], end)
					if k < 0 {
						return nil, strconv.ErrSyntax
					}
					i = start + k + len(end)
					continue
				}
			}
			if k := strings.IndexByte(src[i:], '\n'); k >= 0 {
				i += k + 1
			} else {
				i = len(src)
			}
		case c == '[':
			end, start := longClose(i)
			if end == "" {
				i++
				continue
			}
			k := strings.Index(src[start:], end)
			if k < 0 {
				return nil, strconv.ErrSyntax
			}
			out = append(out, src[start:start+k])
			i = start + k + len(end)
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				} else if src[j] == '\n' {
					return nil, strconv.ErrSyntax
				}
				j++
			}
			if j >= len(src) {
				return nil, strconv.ErrSyntax
			}
			out = append(out, src[i+1:j])
			i = j + 1
		default:
			i++
		}
	}
	return out, nil
}
