package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

func TestConsolePasswordHash(t *testing.T) {
	h, err := console.HashPassword(console.DefaultPasswordParams(), "s3cret password!")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`).MatchString(h) {
		t.Fatalf("not a PHC argon2id string with the default cost: %s", h)
	}
	h2, _ := console.HashPassword(console.DefaultPasswordParams(), "s3cret password!")
	if h == h2 {
		t.Fatal("two hashes of one password must differ (fresh salt)")
	}
	for pw, want := range map[string]bool{"s3cret password!": true, "s3cret password": false, "": false} {
		if ok, err := console.CheckPassword(h, pw); err != nil || ok != want {
			t.Errorf("CheckPassword(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	// Changing the stored cost parameters changes the hash computed: no match.
	if ok, _ := console.CheckPassword(strings.Replace(h, "t=2", "t=3", 1), "s3cret password!"); ok {
		t.Error("a hash with other parameters must not match")
	}
	if _, err := console.CheckPassword("$2a$10$bcrypt", "x"); err == nil {
		t.Error("a hash that is not argon2id must be an error")
	}
	pw, err := console.NewOneTimePassword()
	if err != nil || !regexp.MustCompile(`^[a-km-zA-HJ-NP-Z2-9]{20}$`).MatchString(pw) {
		t.Fatalf("one-time password %q, %v", pw, err)
	}
}

func TestAdminLoginAndForcedPasswordChange(t *testing.T) {
	e := newEnv(t, nil)
	acc := e.bootstrap("Alice", console.RoleAdmin)
	if acc.Username != "alice" || !acc.MustChangePassword || acc.OneTimePassword == "" {
		t.Fatalf("bootstrap account %+v", acc)
	}
	c := e.client()

	// A wrong password and an unknown user get the same answer.
	res, wrong := c.login("alice", "not the password")
	expect(t, "wrong password", res, wrong, http.StatusUnauthorized)
	res, unknown := c.login("nobody", "not the password")
	expect(t, "unknown user", res, unknown, http.StatusUnauthorized)
	if string(wrong) != string(unknown) {
		t.Errorf("wrong password %s and unknown user %s must answer alike", wrong, unknown)
	}

	// The one-time password logs in (case-insensitive username): the cookie is HttpOnly and
	// SameSite=Strict, not Secure over plain HTTP from an untrusted peer.
	res, body := c.login("ALICE", acc.OneTimePassword)
	expect(t, "login", res, body, http.StatusOK)
	var ck *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == console.CookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/" {
		t.Fatalf("session cookie %+v", ck)
	}
	c.adopt(res, body)
	var me struct {
		Account   console.Account `json:"account"`
		CSRFToken string          `json:"csrf_token"`
	}
	res, body = c.do("GET", "/me", nil)
	expect(t, "me", res, body, http.StatusOK)
	decode(t, body, &me)
	if !me.Account.MustChangePassword || me.Account.Role != console.RoleAdmin || me.CSRFToken != c.csrf {
		t.Fatalf("me %+v", me)
	}

	// Until the password is changed, only /me, the change and logout are open.
	for _, r := range []struct{ method, path string }{{"GET", "/projects"}, {"GET", "/accounts"}, {"GET", "/audit"}, {"POST", "/projects"}} {
		res, body = c.do(r.method, r.path, "{}")
		expect(t, r.method+" "+r.path+" before the change", res, body, http.StatusForbidden)
		if !strings.Contains(string(body), "Change your password first") {
			t.Errorf("%s %s: %s", r.method, r.path, body)
		}
	}
	res, body = c.do("POST", "/me/password", map[string]string{"current_password": acc.OneTimePassword, "new_password": "short"})
	expect(t, "too short", res, body, http.StatusBadRequest)
	res, body = c.do("POST", "/me/password", map[string]string{"current_password": "wrong", "new_password": password})
	expect(t, "wrong current password", res, body, http.StatusForbidden)

	oldCookie := c.cookie
	res, body = c.do("POST", "/me/password", map[string]string{"current_password": acc.OneTimePassword, "new_password": password})
	expect(t, "change password", res, body, http.StatusOK)
	c.adopt(res, body)
	if c.cookie == oldCookie {
		t.Fatal("a password change must issue a new session")
	}
	res, body = c.do("GET", "/projects", nil)
	expect(t, "projects after the change", res, body, http.StatusOK)

	// The session the change ended no longer works.
	old := e.client()
	old.cookie = oldCookie
	res, body = old.do("GET", "/me", nil)
	expect(t, "old session", res, body, http.StatusUnauthorized)

	// The one-time password is gone; the new one logs in, without a forced change.
	res, body = e.client().login("alice", acc.OneTimePassword)
	expect(t, "one-time password again", res, body, http.StatusUnauthorized)
	c2 := e.client()
	c2.mustLogin("alice", password)
	res, body = c2.do("GET", "/accounts", nil)
	expect(t, "accounts", res, body, http.StatusOK)

	// Logout ends the session.
	res, body = c2.do("DELETE", "/session", nil)
	expect(t, "logout", res, body, http.StatusNoContent)
	res, body = c2.do("GET", "/me", nil)
	expect(t, "after logout", res, body, http.StatusUnauthorized)
}

func TestAdminPasswordChangeEndsEverySession(t *testing.T) {
	e := newEnv(t, nil)
	a := e.account("bob", console.RoleOperator)
	b := e.client()
	b.mustLogin("bob", password) // a second browser
	res, body := b.do("GET", "/projects", nil)
	expect(t, "second session", res, body, http.StatusOK)

	res, body = a.do("POST", "/me/password", map[string]string{"current_password": password, "new_password": "another long password"})
	expect(t, "change", res, body, http.StatusOK)
	a.adopt(res, body)
	res, body = b.do("GET", "/projects", nil)
	expect(t, "session ended by the change", res, body, http.StatusUnauthorized)
	res, body = a.do("GET", "/projects", nil)
	expect(t, "the changer's new session", res, body, http.StatusOK)
}

// TestAdminLoginThrottle: failures of a username from one address lock that pair, failures from
// one address over any usernames lock the address, and a lock grows with the failures past it.
// (The global slowing of one username is TestAdminLoginThrottleLocksPairNotAccount's.)
func TestAdminLoginThrottle(t *testing.T) {
	e := newEnv(t, func(c *console.Config, _ *console.ServerConfig) {
		c.Throttle = console.ThrottlePolicy{PairFailures: 5, IPFailures: 12, AccountFailures: 100, Window: 15 * time.Minute,
			BaseLock: 30 * time.Second, MaxLock: time.Hour}
	})
	e.account("carol", console.RoleViewer)
	c := e.client()
	for i := 1; i <= 5; i++ {
		res, body := c.login("carol", "guess "+strconv.Itoa(i))
		expect(t, "failure "+strconv.Itoa(i), res, body, http.StatusUnauthorized)
	}
	// Locked: even the right password is refused from this address, at once, with Retry-After.
	res, body := c.login("carol", password)
	expect(t, "locked", res, body, http.StatusTooManyRequests)
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 30 {
		t.Errorf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	// An unknown username is locked the same way: a lock says nothing about accounts.
	for i := 1; i <= 5; i++ {
		c.login("nobody", "guess")
	}
	res, body = c.login("nobody", "guess")
	expect(t, "unknown name locked", res, body, http.StatusTooManyRequests)

	// After the lock, the right password works and clears the count.
	e.clock.Add(31 * time.Second)
	res, body = c.login("carol", password)
	expect(t, "after the lock", res, body, http.StatusOK)

	// The address: 12 failures from it, over any usernames, lock it for everyone. (A refused
	// login is not a failure, and a right password gives its attempt back.)
	for i := 0; i < 12-10-1; i++ { // 10 failures so far from this address, plus the lock's
		c.login("user"+strconv.Itoa(i), "guess")
	}
	res, body = c.login("dave", "guess")
	expect(t, "12th failure from the address", res, body, http.StatusUnauthorized)
	res, body = c.login("carol", password)
	expect(t, "address locked", res, body, http.StatusTooManyRequests)

	// A further failure after the lock doubles it: the lock grows exponentially.
	e.clock.Add(31 * time.Second)
	c.login("erin", "guess")
	e.clock.Add(31 * time.Second)
	res, body = c.login("carol", password)
	expect(t, "doubled lock", res, body, http.StatusTooManyRequests)
	e.clock.Add(31 * time.Second)
	res, body = c.login("carol", password)
	expect(t, "after the doubled lock", res, body, http.StatusOK)
}

// TestAdminLoginThrottleParallelGuesses sends 40 logins of one account from one address at
// once, spread over two console instances, 39 wrong and the right one: the attempts are counted
// before the password is hashed, so no more wrong passwords are checked (401) than the
// threshold, every other login is refused (429), and the owner still logs in from elsewhere.
func TestAdminLoginThrottleParallelGuesses(t *testing.T) {
	const threshold = 5
	e := newEnv(t, func(c *console.Config, s *console.ServerConfig) {
		c.Throttle = console.ThrottlePolicy{PairFailures: threshold, IPFailures: 100, AccountFailures: 100}
		s.TrustedProxies = []string{"127.0.0.0/8"}
	})
	e.account("admin", console.RoleAdmin)
	_, second := e.build(console.ServerConfig{TrustedProxies: []string{"127.0.0.0/8"}})
	bases := []string{e.http.URL, startServer(t, second)}

	statuses := make(chan int, 40)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := "guess " + strconv.Itoa(i)
			if i == 39 {
				pw = password
			}
			body, _ := json.Marshal(map[string]string{"username": "admin", "password": pw})
			req, err := http.NewRequest("POST", bases[i%2]+console.APIPrefix+"/session", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", "203.0.113.66")
			<-start
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			statuses <- res.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for st := range statuses {
		count[st]++
	}
	// The right password's check is no guess: a login that succeeds gives its reservation back,
	// so it may let one more attempt in. Wrong passwords checked never pass the threshold.
	guessed := count[http.StatusUnauthorized]
	if guessed > threshold || count[http.StatusOK] > 1 || guessed+count[http.StatusOK]+count[http.StatusTooManyRequests] != 40 {
		t.Fatalf("answers by status %v: %d wrong passwords checked, want at most %d and every other login 429", count, guessed, threshold)
	}
	// Each password checked is one login or login.failed row in the audit log.
	rows, err := e.store.AdminAudit(context.Background(), contract.AuditFilter{Action: "login.failed"})
	if err != nil || len(rows) > threshold {
		t.Fatalf("%d failed logins audited (%v), want at most %d", len(rows), err, threshold)
	}
	// The lock is the address's: the owner logs in from another one.
	owner := e.client()
	owner.header.Set("X-Forwarded-For", "198.51.100.7")
	owner.mustLogin("admin", password)
}

// TestAdminLoginThrottleLocksPairNotAccount: guesses at the admin account from one address
// lock that address out of the account and no one else, so nobody who can reach the console
// can lock the operators out. Guesses spread over many addresses slow the account's password
// checks to one per AccountSpacing, which its owner waits out in seconds.
func TestAdminLoginThrottleLocksPairNotAccount(t *testing.T) {
	e := newEnv(t, func(c *console.Config, s *console.ServerConfig) {
		c.Throttle = console.ThrottlePolicy{PairFailures: 5, IPFailures: 20, AccountFailures: 8, AccountSpacing: 2 * time.Second,
			Window: 15 * time.Minute, BaseLock: 30 * time.Second, MaxLock: time.Hour}
		s.TrustedProxies = []string{"127.0.0.0/8"}
	})
	e.account("admin", console.RoleAdmin)
	from := func(addr string) *client {
		c := e.client()
		c.header.Set("X-Forwarded-For", addr)
		return c
	}
	attacker, owner := from("203.0.113.1"), from("198.51.100.2")
	for i := 1; i <= 5; i++ {
		res, body := attacker.login("admin", "guess "+strconv.Itoa(i))
		expect(t, "failure "+strconv.Itoa(i), res, body, http.StatusUnauthorized)
	}
	res, body := attacker.login("admin", password)
	expect(t, "the guessing address, locked", res, body, http.StatusTooManyRequests)
	res, body = owner.login("admin", password)
	expect(t, "the owner from another address", res, body, http.StatusOK)

	// Guesses from other addresses: 5 so far, the 8th failure of the account slows it.
	for i, addr := range []string{"203.0.113.2", "203.0.113.2", "203.0.113.3"} {
		res, body = from(addr).login("admin", "guess")
		expect(t, "spread failure "+strconv.Itoa(i+6), res, body, http.StatusUnauthorized)
	}
	res, body = from("203.0.113.4").login("admin", "guess")
	expect(t, "a check before the account's next is due", res, body, http.StatusTooManyRequests)
	res, body = owner.login("admin", password)
	expect(t, "the owner, slowed", res, body, http.StatusTooManyRequests)
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
		t.Errorf("slowed: Retry-After %q, want at most the 2 s spacing", res.Header.Get("Retry-After"))
	}
	e.clock.Add(2 * time.Second)
	res, body = owner.login("admin", password)
	expect(t, "the owner, once the check is due", res, body, http.StatusOK)
	// The owner's login cleared the owner's address only: the guessing one stays locked.
	res, body = attacker.login("admin", password)
	expect(t, "the guessing address after the owner's login", res, body, http.StatusTooManyRequests)
}

func TestAdminSessionSurvivesRestartAndIdles(t *testing.T) {
	e := newEnv(t, nil)
	c := e.account("frank", console.RoleViewer)

	// Another console instance (or this one restarted) on the same database takes the cookie.
	_, srv := e.build(console.ServerConfig{})
	restarted := e.client()
	restarted.base = startServer(t, srv) + console.APIPrefix
	restarted.cookie, restarted.csrf = c.cookie, c.csrf
	res, body := restarted.do("GET", "/me", nil)
	expect(t, "after restart", res, body, http.StatusOK)
	res, body = restarted.do("POST", "/me/password", map[string]string{"current_password": "wrong", "new_password": password + "!"})
	expect(t, "CSRF token after restart (the password is wrong)", res, body, http.StatusForbidden)
	if strings.Contains(string(body), "CSRF") {
		t.Fatalf("the CSRF token must hold across instances: %s", body)
	}

	// Idle past 30 minutes: the session ends; activity keeps it alive.
	e.clock.Add(20 * time.Minute)
	res, body = c.do("GET", "/me", nil)
	expect(t, "20 min", res, body, http.StatusOK)
	e.clock.Add(20 * time.Minute)
	res, body = c.do("GET", "/me", nil)
	expect(t, "20 min after activity", res, body, http.StatusOK)
	e.clock.Add(31 * time.Minute)
	res, body = c.do("GET", "/me", nil)
	expect(t, "idle", res, body, http.StatusUnauthorized)

	// A disabled account's sessions end.
	g := e.account("grace", console.RoleViewer)
	adm := e.account("root", console.RoleAdmin)
	var me struct {
		Account console.Account `json:"account"`
	}
	_, body = g.do("GET", "/me", nil)
	decode(t, body, &me)
	res, body = adm.do("POST", "/accounts/"+me.Account.ID+"/disable", nil)
	expect(t, "disable", res, body, http.StatusOK)
	res, body = g.do("GET", "/me", nil)
	expect(t, "disabled account", res, body, http.StatusUnauthorized)
	res, body = e.client().login("grace", password)
	expect(t, "disabled account's login", res, body, http.StatusUnauthorized)
}
