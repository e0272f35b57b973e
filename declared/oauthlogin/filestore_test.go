package oauthlogin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
)

// TestFileStoreSealed: tokens and clients put in a FileStore are read
// back after a reopen with the same secret, are not in the file in
// plaintext, the file is mode 0600, and another secret or a changed byte
// does not open it.
func TestFileStoreSealed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "tokens.sealed")
	s, err := oauthlogin.OpenFileStore(path, []byte("secret one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("crm", ""); !errors.Is(err, oauthlogin.ErrNoToken) {
		t.Fatalf("Get of an empty store: %v, want ErrNoToken", err)
	}
	tok := &oauth2.Token{AccessToken: "at-0123456789", RefreshToken: "rt-9876543210", Expiry: time.Now().Add(time.Hour).Round(time.Second)}
	if err := s.Put("crm", "", tok); err != nil {
		t.Fatal(err)
	}
	if err := s.PutClient("crm", "", &oauthlogin.Client{ClientID: "c", ClientSecret: "cs-secret-value", TokenURL: "https://as/token"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []string{"at-0123456789", "rt-9876543210", "cs-secret-value", "crm", "tokens"} {
		if strings.Contains(string(b), plain) {
			t.Errorf("the file holds %q in plaintext", plain)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := oauthlogin.OpenFileStore(path, []byte("secret one"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Get("crm", "")
	if err != nil || got.AccessToken != tok.AccessToken || got.RefreshToken != tok.RefreshToken || !got.Expiry.Equal(tok.Expiry) {
		t.Fatalf("after a reopen: %+v %v, want %+v", got, err, tok)
	}
	if c, err := again.GetClient("crm", ""); err != nil || c.ClientSecret != "cs-secret-value" {
		t.Fatalf("client after a reopen: %+v %v", c, err)
	}
	if _, err := again.Get("crm", "alice"); !errors.Is(err, oauthlogin.ErrNoToken) {
		t.Errorf("another principal's token: %v, want ErrNoToken", err)
	}
	if _, err := oauthlogin.OpenFileStore(path, []byte("secret two")); err == nil || !strings.Contains(err.Error(), "does not open with this secret") {
		t.Errorf("another secret: %v", err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := oauthlogin.OpenFileStore(path, []byte("secret one")); err == nil {
		t.Error("a changed file opened")
	}
	if _, err := oauthlogin.OpenFileStore(path, nil); err == nil {
		t.Error("an empty secret was taken")
	}
}

// TestCallbackMatchesState: the callback hands the authorization
// response to the login whose state it carries, once; an unknown state
// and a second use are refused (400), and the page says the outcome the
// flow reports.
func TestCallbackMatchesState(t *testing.T) {
	reg := oauthlogin.NewRegistry(&oauthlogin.MemoryStore{}, "http://127.0.0.1/oauth/callback", nil)
	srv := httptest.NewServer(http.HandlerFunc(reg.Callback))
	defer srv.Close()
	got := make(chan oauthlogin.Response, 1)
	go func() {
		r, finish, err := reg.Await(context.Background(), "crm", "", "https://as/authorize?state=S1", nil)
		if err != nil {
			t.Error(err)
			return
		}
		finish(nil)
		got <- r
	}()
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := http.Get(srv.URL + "?code=C1&state=S1&iss=https://as")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusBadRequest || time.Now().After(deadline) {
			resp = r
			break
		}
		// Await has not registered the state yet: the callback refused it.
		time.Sleep(10 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	if r := <-got; r.Code != "C1" || r.Iss != "https://as" {
		t.Errorf("response %+v", r)
	}
	r2, err := http.Get(srv.URL + "?code=C1&state=S1")
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusBadRequest {
		t.Errorf("a second use of the state: %d, want 400", r2.StatusCode)
	}
}
