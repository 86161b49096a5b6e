package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

// TestConsoleServedBesideAPI: a process with the api role serves the operator console on its
// own listener, over the same stores.
func TestConsoleServedBesideAPI(t *testing.T) {
	s := testkit.NewStack(t)
	ctx := context.Background()
	st, err := store.Open(ctx, s.Config.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := console.NewService(console.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := svc.CreateAccount(ctx, console.SystemActor("test"), "root", console.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, consoleURL := s.StartAPIWithConsole()
	url := consoleURL + console.APIPrefix + "/session"
	body := `{"username":"root","password":"` + acc.OneTimePassword + `"}`
	testkit.WaitFor(t, 20*time.Second, "the console", func() (bool, string) {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
