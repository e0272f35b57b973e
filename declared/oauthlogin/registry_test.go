package oauthlogin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
)

// TestAwaitRegistersBeforeWaiting: the login is registered when Await
// calls waiting, where the flow hands its authorization URL out, so that
// a response arriving at once (here within waiting, an authorization
// server's refusal, which the callback answers without waiting for the
// flow) finds its login. Before, the flow handed the URL out and then
// called Await: a quick enough browser got "No login waits for this
// response" (TestOAuthLogin failed so under load).
func TestAwaitRegistersBeforeWaiting(t *testing.T) {
	reg := oauthlogin.NewRegistry(&oauthlogin.MemoryStore{}, "http://127.0.0.1/oauth/callback", nil)
	var status int
	var page string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds the wait of a login never found
	defer cancel()
	resp, _, err := reg.Await(ctx, "crm", "", "https://as/authorize?state=S7", func() {
		w := httptest.NewRecorder()
		reg.Callback(w, httptest.NewRequest(http.MethodGet, oauthlogin.CallbackPath+"?state=S7&error=access_denied", nil))
		status, page = w.Code, w.Body.String()
	})
	if status != http.StatusBadRequest || !strings.Contains(page, "Login to crm failed: the authorization server refused: access_denied") {
		t.Fatalf("the callback within waiting: %d %s; want the login found, refused", status, page)
	}
	if err != nil || resp.State != "S7" || resp.Code != "" {
		t.Fatalf("Await = %+v, %v; want the refusal's response", resp, err)
	}
}

// TestBeginHandsOutOneLoginPerPrincipal: the calls of a principal that
// has not logged in get the one login begun for it (one flow, not one
// per call), another principal gets its own, and once the login's
// response has come a new Begin begins a new one.
func TestBeginHandsOutOneLoginPerPrincipal(t *testing.T) {
	reg := oauthlogin.NewRegistry(&oauthlogin.MemoryStore{}, "http://127.0.0.1/oauth/callback", nil)
	var flows atomic.Int32
	waiting := make(chan string, 8)
	reg.Register("crm", true, func(ctx context.Context, principal string) (string, error) {
		n := flows.Add(1)
		u := fmt.Sprintf("https://as/authorize?state=S%d-%s", n, principal)
		go func() {
			_, finish, err := reg.Await(context.Background(), "crm", principal, u, nil)
			if err == nil {
				finish(nil)
			}
		}()
		waiting <- u
		return u, nil
	})
	ctx := context.Background()
	a1, err := reg.Begin(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	<-waiting
	for range 5 {
		if a, err := reg.Begin(ctx, "crm", "alice"); err != nil || a != a1 {
			t.Fatalf("alice's Begin again: %q %v, want %q", a, err, a1)
		}
	}
	b1, err := reg.Begin(ctx, "crm", "bob")
	if err != nil || b1 == a1 {
		t.Fatalf("bob's Begin: %q %v, want a login of his own", b1, err)
	}
	<-waiting
	if n := flows.Load(); n != 2 {
		t.Fatalf("%d flows begun, want 2 (one per principal)", n)
	}
	srv := httptest.NewServer(http.HandlerFunc(reg.Callback))
	defer srv.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := http.Get(srv.URL + "?code=C&state=S1-alice")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("callback of alice's login: %d", r.StatusCode)
		}
		time.Sleep(10 * time.Millisecond) // Await has not registered the state yet
	}
	a2, err := reg.Begin(ctx, "crm", "alice")
	if err != nil || a2 == a1 {
		t.Fatalf("alice's Begin after her login's response: %q %v, want a new login", a2, err)
	}
	if _, err := reg.Begin(ctx, "nosuch", "alice"); !errors.Is(err, oauthlogin.ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
}
