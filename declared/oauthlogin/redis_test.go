package oauthlogin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/testkit"
)

// openRedis is a RedisStore at url sealed with secret, closed when the
// test ends.
func openRedis(t *testing.T, url, secret string) *oauthlogin.RedisStore {
	t.Helper()
	s, err := oauthlogin.NewRedisStore(context.Background(), url, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestRedisStoreShared: two stores on one real redis-server (two
// replicas) share tokens and clients: what A puts, B gets, lists and
// deletes; each principal's token is its own; Redis holds neither a
// token, a secret nor a principal in plaintext; a store of another
// secret opens none of it, and a value moved to another principal's
// field does not open as that principal's.
func TestRedisStoreShared(t *testing.T) {
	url := testkit.StartRedis(t)
	const secret = "a sealing key of at least thirty-two bytes"
	a, b := openRedis(t, url, secret), openRedis(t, url, secret)
	if _, err := b.Get("crm", "alice"); !errors.Is(err, oauthlogin.ErrNoToken) {
		t.Fatalf("Get of an empty store: %v, want ErrNoToken", err)
	}
	exp := time.Now().Add(time.Hour).Round(time.Second)
	if err := a.Put("crm", "alice", &oauth2.Token{AccessToken: "at-alice-123", RefreshToken: "rt-alice-456", Expiry: exp}); err != nil {
		t.Fatal(err)
	}
	if err := a.Put("crm", "bob", &oauth2.Token{AccessToken: "at-bob-789"}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutClient("crm", "alice", &oauthlogin.Client{ClientID: "cid", ClientSecret: "client-secret-xyz", TokenURL: "http://as/token"}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get("crm", "alice")
	if err != nil || got.AccessToken != "at-alice-123" || got.RefreshToken != "rt-alice-456" || !got.Expiry.Equal(exp) {
		t.Fatalf("B's Get of A's token: %+v, %v", got, err)
	}
	if got, err := b.Get("crm", "bob"); err != nil || got.AccessToken != "at-bob-789" {
		t.Fatalf("bob's token: %+v, %v", got, err)
	}
	if c, err := b.GetClient("crm", "alice"); err != nil || c.ClientSecret != "client-secret-xyz" {
		t.Fatalf("B's GetClient: %+v, %v", c, err)
	}
	if ps, err := b.Principals("crm"); err != nil || strings.Join(ps, ",") != "alice,bob" {
		t.Fatalf("Principals: %q, %v, want alice,bob", ps, err)
	}

	raw := redis.NewClient(mustParse(t, url))
	defer raw.Close()
	ctx := context.Background()
	keys, err := raw.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys in Redis: %q, %v", keys, err)
	}
	var dump strings.Builder
	for _, k := range keys {
		dump.WriteString(k)
		m, err := raw.HGetAll(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range m {
			dump.WriteString(f + v)
		}
		if !strings.HasPrefix(k, oauthlogin.DefaultRedisPrefix) {
			t.Errorf("key %q outside %q", k, oauthlogin.DefaultRedisPrefix)
		}
	}
	for _, plain := range []string{"at-alice-123", "rt-alice-456", "at-bob-789", "client-secret-xyz", "alice", "bob"} {
		if strings.Contains(dump.String(), plain) {
			t.Errorf("Redis holds %q in plaintext", plain)
		}
	}

	other := openRedis(t, url, "another sealing key of thirty-two bytes!")
	if _, err := other.Get("crm", "alice"); err == nil || !strings.Contains(err.Error(), "does not open with this secret") {
		t.Errorf("another secret's Get: %v, want does not open", err)
	}
	// Alice's sealed value written at bob's field is not bob's token.
	tk := oauthlogin.DefaultRedisPrefix + "tokens:crm"
	fields, _ := raw.HKeys(ctx, tk).Result()
	vals, _ := raw.HVals(ctx, tk).Result()
	if len(fields) != 2 {
		t.Fatalf("fields of %s: %q", tk, fields)
	}
	if err := raw.HSet(ctx, tk, fields[1], vals[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Principals("crm"); err == nil {
		t.Errorf("a value moved to another principal's field opened")
	}

	if err := b.Delete("crm", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get("crm", "alice"); !errors.Is(err, oauthlogin.ErrNoToken) {
		t.Errorf("A's Get after B's Delete: %v, want ErrNoToken", err)
	}
	if _, err := a.GetClient("crm", "alice"); !errors.Is(err, oauthlogin.ErrNoToken) {
		t.Errorf("A's GetClient after B's Delete: %v, want ErrNoToken", err)
	}
}

// TestRedisStoreLock: while replica A holds the refresh lock of a
// (server, principal), B's Lock waits (its context ends first) and a
// Lock of another principal does not; once A releases it, B takes it.
func TestRedisStoreLock(t *testing.T) {
	url := testkit.StartRedis(t)
	const secret = "a sealing key of at least thirty-two bytes"
	a, b := openRedis(t, url, secret), openRedis(t, url, secret)
	unlock, err := a.Lock(context.Background(), "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = b.Lock(ctx, "crm", "alice")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B's Lock while A holds it: %v, want the context's end", err)
	}
	bobUnlock, err := b.Lock(context.Background(), "crm", "bob")
	if err != nil {
		t.Fatalf("another principal's lock: %v", err)
	}
	bobUnlock()
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(context.Background(), "crm", "alice")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("B's Lock after A's release: %v", err)
	}
}

// mustParse is redis.ParseURL of url.
func mustParse(t *testing.T, url string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
