package contract_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// docs/api.md is the integrators' reference. Its worked example marks its fenced blocks with an
// info string "<language> <role> <name>" (```text signing-example list) so this file can hold
// it to the code: the string to sign and the signature of each example are recomputed with
// this package's signing code, the bash one-liners and the curl commands are run, and the
// "signing from bash" recipe signs live requests a server checks the way the service does.
// Editing the page without the code, or the code without the page, fails here.

// docBlock is one fenced block of docs/api.md.
type docBlock struct {
	lang, role, name string
	text             string // the lines between the fences, joined by \n, without a last \n
	line             int    // the line of the opening fence
}

// apiDoc reads docs/api.md from the repository root, found by walking up to go.mod (this
// package imports nothing of ours, not even in tests).
func apiDoc(t *testing.T) (string, []docBlock) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	raw, err := os.ReadFile(filepath.Join(dir, "docs", "api.md"))
	if err != nil {
		t.Fatalf("read the API reference: %v", err)
	}
	var (
		blocks []docBlock
		cur    *docBlock
		lines  []string
	)
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			f := strings.Fields(strings.TrimPrefix(l, "```"))
			cur = &docBlock{line: n}
			for i, v := range f {
				switch i {
				case 0:
					cur.lang = v
				case 1:
					cur.role = v
				case 2:
					cur.name = v
				}
			}
			lines = lines[:0]
		case cur != nil && l == "```":
			cur.text = strings.Join(lines, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, l)
		}
	}
	if cur != nil {
		t.Fatalf("docs/api.md:%d: a fenced block is not closed", cur.line)
	}
	return string(raw), blocks
}

// example is one request of the worked example with the blocks the page shows for it.
type example struct {
	name                                    string
	method, target, path, query             string
	body                                    []byte
	timestamp, nonce                        string
	inputsLine                              int
	stringToSign, signature, oneliner, curl *docBlock
	accepted, refused, badSignatureAnswer   *docBlock
}

// fields reads "name: value" lines; "(none)" is the empty value.
func fields(t *testing.T, b docBlock) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(b.text, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("docs/api.md:%d: %q is not a name: value line", b.line, l)
		}
		v = strings.TrimSpace(v)
		if v == "(none)" {
			v = ""
		}
		m[strings.TrimSpace(k)] = v
	}
	return m
}

// examples gathers the worked example's blocks by name.
func examples(t *testing.T, blocks []docBlock) (keyID, secret string, out []*example) {
	t.Helper()
	byName := map[string]*example{}
	for i := range blocks {
		b := &blocks[i]
		if b.role == "signing-key" {
			m := fields(t, *b)
			keyID, secret = m["key_id"], m["secret"]
			continue
		}
		if b.role != "signing-inputs" {
			continue
		}
		m := fields(t, *b)
		e := &example{name: b.name, method: m["method"], target: m["target"], timestamp: m["timestamp"], nonce: m["nonce"], inputsLine: b.line}
		e.path, e.query, _ = strings.Cut(e.target, "?")
		if m["body"] != "" {
			e.body = []byte(m["body"])
		}
		if byName[b.name] != nil {
			t.Fatalf("docs/api.md:%d: two examples named %q", b.line, b.name)
		}
		byName[b.name] = e
		out = append(out, e)
	}
	for i := range blocks {
		b := &blocks[i]
		slot := map[string]func(*example) **docBlock{
			"signing-example":      func(e *example) **docBlock { return &e.stringToSign },
			"signature":            func(e *example) **docBlock { return &e.signature },
			"signing-oneliner":     func(e *example) **docBlock { return &e.oneliner },
			"curl-example":         func(e *example) **docBlock { return &e.curl },
			"accepted-queries":     func(e *example) **docBlock { return &e.accepted },
			"refused-queries":      func(e *example) **docBlock { return &e.refused },
			"bad-signature-answer": func(e *example) **docBlock { return &e.badSignatureAnswer },
		}[b.role]
		if slot == nil {
			continue
		}
		e := byName[b.name]
		if e == nil {
			t.Fatalf("docs/api.md:%d: %s block %q has no signing-inputs block of that name", b.line, b.role, b.name)
		}
		*slot(e) = b
	}
	if !validKeyMaterial(keyID, secret) {
		t.Fatalf("docs/api.md: the signing-key block must give a key_id of 32 and a secret of 64 lowercase hex characters, got %q and %q", keyID, secret)
	}
	return keyID, secret, out
}

// validKeyMaterial tells whether an example key has the contract's form.
func validKeyMaterial(keyID, secret string) bool {
	hex := regexp.MustCompile(`^[0-9a-f]+$`)
	return len(keyID) == 32 && len(secret) == 64 && hex.MatchString(keyID) && hex.MatchString(secret)
}

// TestAPIDocWorkedExample recomputes every string to sign and signature of docs/api.md with the
// signing code, and checks the queries it says are accepted and refused, and the 401 it shows.
func TestAPIDocWorkedExample(t *testing.T) {
	doc, blocks := apiDoc(t)
	_, secret, exs := examples(t, blocks)
	var haveGETQueryNonce, havePOSTBody bool
	for _, e := range exs {
		t.Run(e.name, func(t *testing.T) {
			if e.stringToSign == nil || e.signature == nil {
				t.Fatalf("docs/api.md:%d: example %q needs a signing-example and a signature block", e.inputsLine, e.name)
			}
			bodyHash := contract.BodySHA256(e.body)
			sts := contract.StringToSign(e.method, e.path, e.query, bodyHash, e.timestamp, e.nonce)
			if sts != e.stringToSign.text {
				t.Errorf("docs/api.md:%d: the string to sign of %q is\n%s\nbut the signing code builds\n%s", e.stringToSign.line, e.name, e.stringToSign.text, sts)
			}
			sig := contract.Sign(secret, sts)
			if got := strings.TrimSpace(e.signature.text); got != sig {
				t.Errorf("docs/api.md:%d: the signature of %q is %s, the signing code makes %s", e.signature.line, e.name, got, sig)
			}
			if !contract.NewVerifier(secret).Verify(sig, e.method, e.path, e.query, bodyHash, e.timestamp, e.nonce) {
				t.Errorf("example %q: the server's verifier refuses the signature the page gives", e.name)
			}
			lines := strings.Split(sts, "\n")
			queryLine := func(q string) string {
				l := append([]string(nil), lines...)
				l[2] = q
				return strings.Join(l, "\n")
			}
			if e.accepted != nil {
				for _, q := range strings.Split(e.accepted.text, "\n") {
					if !contract.NewVerifier(secret).Verify(contract.Sign(secret, queryLine(q)), e.method, e.path, e.query, bodyHash, e.timestamp, e.nonce) {
						t.Errorf("docs/api.md:%d: the page says QUERY %q is accepted for %s, the verifier refuses it", e.accepted.line, q, e.target)
					}
				}
			}
			if e.refused != nil {
				for _, q := range strings.Split(e.refused.text, "\n") {
					if contract.NewVerifier(secret).Verify(contract.Sign(secret, queryLine(q)), e.method, e.path, e.query, bodyHash, e.timestamp, e.nonce) {
						t.Errorf("docs/api.md:%d: the page says QUERY %q is refused for %s, the verifier accepts it", e.refused.line, q, e.target)
					}
				}
			}
			if e.badSignatureAnswer != nil {
				// The service's 401 for an unknown key or a wrong signature (api/httpapi/auth.go).
				want, err := json.Marshal(contract.ErrorBody{Detail: "Invalid API key or signature: " +
					contract.ExplainSignature(e.method, e.path, e.query, bodyHash, e.timestamp, e.nonce)})
				if err != nil {
					t.Fatal(err)
				}
				if e.badSignatureAnswer.text != string(want) {
					t.Errorf("docs/api.md:%d: the 401 shown is\n%s\nthe service answers\n%s", e.badSignatureAnswer.line, e.badSignatureAnswer.text, want)
				}
			}
			if e.method == http.MethodGet && e.query != "" && e.nonce != "" {
				haveGETQueryNonce = true
			}
			if e.method == http.MethodPost && len(e.body) > 0 {
				havePOSTBody = true
				if m := regexp.MustCompile(`exactly those (\d+) bytes`).FindStringSubmatch(doc); m != nil && m[1] != strconv.Itoa(len(e.body)) {
					t.Errorf("docs/api.md says the body is %s bytes; it is %d", m[1], len(e.body))
				}
			}
		})
	}
	if !haveGETQueryNonce || !havePOSTBody {
		t.Errorf("the worked example must show a GET with a query and a nonce and a POST with a body (have: %v, %v)", haveGETQueryNonce, havePOSTBody)
	}
	if !strings.Contains(doc, "/openapi.yaml") {
		t.Error("docs/api.md does not point to /openapi.yaml")
	}
}

// needTools skips a test when a command the page's shell snippets use is missing.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: the page's shell snippets cannot be run here", n)
		}
	}
}

// runBash runs script with bash and extra environment, and returns its standard output.
func runBash(t *testing.T, script string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\nscript:\n%s\nstderr:\n%s", err, script, stderr.String())
	}
	return string(out)
}

// received is one request as a server saw it.
type received struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// recorder is a server that records what it receives and answers with answer.
func recorder(t *testing.T, answer func(received) (int, string)) (*httptest.Server, func() []received) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []received
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		path, query, _ := strings.Cut(r.RequestURI, "?")
		rec := received{method: r.Method, path: path, query: query, header: r.Header.Clone(), body: body}
		mu.Lock()
		got = append(got, rec)
		mu.Unlock()
		status, out := answer(rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

// TestAPIDocShellSnippets runs the page's bash one-liners (each must print its example's
// signature) and its curl commands (each must send exactly the request that was signed).
func TestAPIDocShellSnippets(t *testing.T) {
	needTools(t, "bash", "openssl", "curl")
	_, blocks := apiDoc(t)
	keyID, secret, exs := examples(t, blocks)
	for _, e := range exs {
		if e.signature == nil {
			continue // TestAPIDocWorkedExample says what is missing
		}
		sig := strings.TrimSpace(e.signature.text)
		t.Run(e.name, func(t *testing.T) {
			if e.oneliner != nil {
				if got := strings.TrimSpace(runBash(t, e.oneliner.text)); got != sig {
					t.Errorf("docs/api.md:%d: the one-liner prints %q, want the signature %s", e.oneliner.line, got, sig)
				}
			}
			if e.curl == nil {
				return
			}
			srv, got := recorder(t, func(received) (int, string) { return http.StatusOK, "{}" })
			runBash(t, e.curl.text, "ACV_URL="+srv.URL)
			reqs := got()
			if len(reqs) != 1 {
				t.Fatalf("docs/api.md:%d: the curl command sent %d requests", e.curl.line, len(reqs))
			}
			r := reqs[0]
			if r.method != e.method || r.path != e.path || r.query != e.query || string(r.body) != string(e.body) {
				t.Errorf("docs/api.md:%d: curl sent %s %s (query %q) with body %q; the example signs %s %s with body %q",
					e.curl.line, r.method, r.path, r.query, r.body, e.method, e.target, e.body)
			}
			for h, want := range map[string]string{"X-Api-Key": keyID, "X-Timestamp": e.timestamp, "X-Nonce": e.nonce, "X-Signature": sig} {
				if vs := r.header.Values(h); (want == "" && len(vs) != 0) || (want != "" && (len(vs) != 1 || vs[0] != want)) {
					t.Errorf("docs/api.md:%d: curl sent %s %q, want %q", e.curl.line, h, vs, want)
				}
			}
			if !contract.NewVerifier(secret).Verify(r.header.Get("X-Signature"), r.method, r.path, r.query,
				contract.BodySHA256(r.body), r.header.Get("X-Timestamp"), r.header.Get("X-Nonce")) {
				t.Errorf("docs/api.md:%d: the request curl sent does not verify", e.curl.line)
			}
		})
	}
}

// TestAPIDocBashRecipe loads the page's "signing from bash" function and sends requests with it
// to a server that authenticates them as the service does: signature by the verifier, the
// timestamp within the window, a nonce of the contract's form, new for every request.
func TestAPIDocBashRecipe(t *testing.T) {
	needTools(t, "bash", "openssl", "curl")
	_, blocks := apiDoc(t)
	keyID, secret, _ := examples(t, blocks)
	var recipe *docBlock
	for i := range blocks {
		if blocks[i].role == "signing-recipe" {
			recipe = &blocks[i]
		}
	}
	if recipe == nil {
		t.Fatal("docs/api.md has no signing-recipe block")
	}
	seen := map[string]bool{}
	var mu sync.Mutex
	srv, got := recorder(t, func(r received) (int, string) {
		h := r.header
		ts, err := contract.ParseTimestamp(h.Get("X-Timestamp"))
		switch {
		case h.Get("X-Api-Key") != keyID:
			return http.StatusUnauthorized, `{"detail":"wrong key id"}`
		case err != nil || ts < time.Now().Unix()-contract.SignatureWindow || ts > time.Now().Unix()+contract.SignatureWindow:
			return http.StatusUnauthorized, `{"detail":"timestamp outside the window"}`
		case !contract.ValidNonce(h.Get("X-Nonce")):
			return http.StatusUnauthorized, `{"detail":"no nonce of the contract's form"}`
		case !contract.NewVerifier(secret).Verify(h.Get("X-Signature"), r.method, r.path, r.query, contract.BodySHA256(r.body), h.Get("X-Timestamp"), h.Get("X-Nonce")):
			return http.StatusUnauthorized, `{"detail":"bad signature"}`
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[h.Get("X-Nonce")] {
			return http.StatusUnauthorized, `{"detail":"nonce reused"}`
		}
		seen[h.Get("X-Nonce")] = true
		return http.StatusOK, `{"ok":true}`
	})
	const p = "/api/v1/projects/01932b6e4f3a7c1d9e2f3a4b5c6d7e8f"
	calls := []struct{ method, target, body string }{
		{"GET", p, ""},
		{"GET", p + "/codes?status=used&page=2&search=a%20b", ""},
		{"GET", p + "/codes?search=it%27s+50%25&page_size=5&page=1&status=used&tag=b&tag=a&&a-=1&a=2", ""},
		{"GET", p + "/codes/by-code/A%2FB%20C%2B%C3%A9", ""},
		{"POST", p + "/codes/verify", `{"code":"SPRING-2024-0001","verified_by":"till 7 (it's me)"}`},
		{"POST", p + "/codes/verify", `{"code":"SPRING-2024-0001","verified_by":"till 7 (it's me)"}`},
		{"POST", p + "/codes/reactivate", `{"code":"A&B=C","reason":"refund #12 – 100%"}`},
	}
	var script strings.Builder
	script.WriteString(recipe.text + "\n")
	for _, c := range calls {
		script.WriteString("acv_request " + shellQuote(c.method) + " " + shellQuote(c.target))
		if c.body != "" {
			script.WriteString(" " + shellQuote(c.body))
		}
		script.WriteString("; echo\n")
	}
	out := runBash(t, script.String(), "ACV_URL="+srv.URL, "ACV_KEY_ID="+keyID, "ACV_SECRET="+secret)
	answers := strings.Split(strings.TrimSpace(out), "\n")
	reqs := got()
	if len(answers) != len(calls) || len(reqs) != len(calls) {
		t.Fatalf("%d calls, %d answers, %d requests received:\n%s", len(calls), len(answers), len(reqs), out)
	}
	for i, c := range calls {
		r := reqs[i]
		if answers[i] != `{"ok":true}` {
			t.Errorf("docs/api.md:%d: acv_request %s %s: %s", recipe.line, c.method, c.target, answers[i])
		}
		sent := r.path
		if r.query != "" {
			sent += "?" + r.query
		}
		if r.method != c.method || sent != c.target {
			t.Errorf("acv_request %s %s sent %s %s", c.method, c.target, r.method, sent)
		}
		if string(r.body) != c.body {
			t.Errorf("acv_request %s %s sent body %q, want %q", c.method, c.target, r.body, c.body)
		}
		if c.body != "" && r.header.Get("Content-Type") != "application/json" {
			t.Errorf("acv_request %s %s sent Content-Type %q", c.method, c.target, r.header.Get("Content-Type"))
		}
	}
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
