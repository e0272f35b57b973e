package mcpadapter

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestRefreshOnceAcrossReplicas: two hosts (two login clients, each
// with a RedisStore of its own on one real redis-server) refresh the
// same expired token at once; the token endpoint, which rotates refresh
// tokens and refuses a spent one, sees one refresh, and both hosts end
// with the token it gave.
func TestRefreshOnceAcrossReplicas(t *testing.T) {
	url := testkit.StartRedis(t)
	var mu sync.Mutex
	refreshes, live := 0, "rt-0"
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != live {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		refreshes++
		live = "rt-" + string(rune('0'+refreshes))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + live, "refresh_token": live, "token_type": "Bearer", "expires_in": 3600})
	}))
	defer as.Close()

	const secret = "a sealing key of at least thirty-two bytes"
	expired := &oauth2.Token{AccessToken: "at-0", RefreshToken: "rt-0", Expiry: time.Now().Add(-time.Minute)}
	var clients []*loginClient
	for i := range 2 {
		s, err := oauthlogin.NewRedisStore(context.Background(), url, []byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if i == 0 {
			if err := s.Put("crm", "alice", expired); err != nil {
				t.Fatal(err)
			}
			if err := s.PutClient("crm", "alice", &oauthlogin.Client{ClientID: "app", TokenURL: as.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}); err != nil {
				t.Fatal(err)
			}
		}
		clients = append(clients, &loginClient{server: "crm", reg: oauthlogin.NewRegistry(s, "http://127.0.0.1/oauth/callback", nil), hc: &http.Client{Timeout: 10 * time.Second}})
	}
	got := make([]*oauth2.Token, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = c.refreshFor("alice", expired)
		}()
	}
	wg.Wait()
	for i := range clients {
		if errs[i] != nil {
			t.Fatalf("host %d: %v", i, errs[i])
		}
		if got[i].AccessToken != "at-rt-1" {
			t.Errorf("host %d holds %q, want the one refresh's at-rt-1", i, got[i].AccessToken)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if refreshes != 1 {
		t.Errorf("%d refreshes at the token endpoint, want 1", refreshes)
	}
}
