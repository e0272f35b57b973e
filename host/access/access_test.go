package access_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/access"
)

func sha(k string) string {
	s := sha256.Sum256([]byte(k))
	return hex.EncodeToString(s[:])
}

func TestParseFileFaults(t *testing.T) {
	for _, tc := range []struct{ file, path, msg string }{
		{`[]`, "$", "must be a JSON object"},
		{`{"keys":[{"name":"a","key":"k","allow":[]}],"keys":[]}`, "$.keys", "duplicate member"},
		{`{"keys":[{"name":"a","name":"b","key":"k","allow":[]}]}`, "$.keys[0].name", "duplicate member"},
		{`{"keys":[{"name":"a","key":"k","allow":[],"Rate":{}}]}`, "$.keys[0].Rate", "unknown member"},
		{`{"keys":[{"name":"a","key":"k","allow":[],"rate":{"per_second":1,"burts":2}}]}`, "$.keys[0].rate.burts", "unknown member"},
		{`{"extra":1,"keys":[]}`, "$.extra", "unknown member"},
		{`{}`, "$.keys", "is required"},
		{`{"keys":[{"name":"a","key":"k"}]}`, "$.keys[0].allow", "is required"},
		{`{"keys":[{"name":"ok","key":"k","allow":["*"]},{"name":"a","key":7,"allow":[]}]}`, "$.keys[1].key", "must be a string"},
		{`{"keys":[{"name":"a","key":"k","allow":"*"}]}`, "$.keys[0].allow", "must be an array"},
		{`{"keys":[{"name":"a","key":"k","allow":[],"rate":{"per_second":"5"}}]}`, "$.keys[0].rate.per_second", "must be a number"},
		{`{"keys":[{"name":"","key":"k","allow":[]}]}`, "$.keys[0].name", "is required"},
		{`{"keys":[{"name":"a b","key":"k","allow":[]}]}`, "$.keys[0].name", "1 to 64"},
		{`{"keys":[{"name":"a","allow":[]}]}`, "$.keys[0]", `exactly one of "key" and "sha256"`},
		{`{"keys":[{"name":"a","key":"k","sha256":"` + sha("k") + `","allow":[]}]}`, "$.keys[0]", `exactly one of "key" and "sha256"`},
		{`{"keys":[{"name":"a","key":"k k","allow":[]}]}`, "$.keys[0].key", "must not contain spaces"},
		{`{"keys":[{"name":"a","sha256":"abc","allow":[]}]}`, "$.keys[0].sha256", "64 hex digits"},
		{`{"keys":[{"name":"a","key":"k","allow":["add",""]}]}`, "$.keys[0].allow[1]", "must not be empty"},
		{`{"keys":[{"name":"a","key":"k","allow":["plugin:"]}]}`, "$.keys[0].allow[0]", `"plugin:" needs`},
		{`{"keys":[{"name":"a","key":"k","allow":["a[b"]}]}`, "$.keys[0].allow[0]", "bad glob"},
		{`{"keys":[{"name":"a","key":"k","allow":[],"rate":{"per_second":0}}]}`, "$.keys[0].rate.per_second", "above 0"},
		{`{"keys":[{"name":"a","key":"k","allow":[],"rate":{"per_second":1,"burst":-1}}]}`, "$.keys[0].rate.burst", "at least 1"},
		{`{"keys":[{"name":"a","key":"k","allow":[]},{"name":"a","key":"j","allow":[]}]}`, "$.keys[1].name", `"a" is also the name of $.keys[0]`},
		{`{"keys":[{"name":"a","key":"secret-1","allow":[]},{"name":"b","sha256":"` + strings.ToUpper(sha("secret-1")) + `","allow":[]}]}`, "$.keys[1]", "the same key as $.keys[0]"},
	} {
		_, err := access.ParseFile([]byte(tc.file))
		var f *access.Fault
		if !errors.As(err, &f) || f.Path != tc.path || !strings.Contains(f.Message, tc.msg) {
			t.Errorf("%s:\n got %v\nwant %s: ...%s...", tc.file, err, tc.path, tc.msg)
			continue
		}
		if strings.Contains(err.Error(), "secret-1") || strings.Contains(strings.ToLower(err.Error()), sha("secret-1")) {
			t.Errorf("%s: the fault shows a key: %v", tc.file, err)
		}
	}
}

func TestGrantAllows(t *testing.T) {
	const file = `{"keys":[
		{"name":"all","key":"k-all","allow":["*"]},
		{"name":"none","key":"k-none","allow":[]},
		{"name":"some","sha256":"` + "%s" + `","allow":["add","fs_*","plugin:calc?","plugin:mock"]}]}`
	g, err := access.New(access.Config{File: writeFile(t, strings.Replace(file, "%s", sha("k-some"), 1))})
	if err != nil {
		t.Fatal(err)
	}
	grants := map[string]*access.Grant{}
	for _, k := range []string{"k-all", "k-none", "k-some"} {
		grants[k] = grantOf(t, g, k)
	}
	for _, tc := range []struct {
		key, plugin, fn string
		want            bool
	}{
		{"k-all", "x", "anything", true},
		{"k-none", "mock", "count", false},
		{"k-some", "other", "add", true},
		{"k-some", "other", "fs_read", true},
		{"k-some", "other", "addx", false},
		{"k-some", "calc1", "divide", true},
		{"k-some", "calculator", "divide", false},
		{"k-some", "mock", "create", true},
		{"k-some", "mockx", "create", false},
	} {
		if got := grants[tc.key].Allows(tc.plugin, tc.fn); got != tc.want {
			t.Errorf("%s: Allows(%q, %q) = %v", tc.key, tc.plugin, tc.fn, got)
		}
		if got := access.Allowed(access.WithGrant(context.Background(), grants[tc.key]), tc.plugin, tc.fn); got != tc.want {
			t.Errorf("%s: Allowed(%q, %q) = %v", tc.key, tc.plugin, tc.fn, got)
		}
	}
	if !access.Allowed(context.Background(), "any", "thing") {
		t.Error("no grant (auth off) must allow everything")
	}
	if grants["k-all"].Restricted() || !grants["k-none"].Restricted() || !grants["k-some"].Restricted() {
		t.Error("Restricted is wrong")
	}
}

// grantOf authenticates key through g's middleware and returns the grant
// the request carried on.
func grantOf(t testing.TB, g *access.Guard, key string) *access.Grant {
	t.Helper()
	var got *access.Grant
	h := g.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = access.GrantFrom(r.Context()) }))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got == nil {
		t.Fatalf("key %q refused: %d %s", key, rec.Code, rec.Body)
	}
	return got
}

func writeFile(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMiddleware(t *testing.T) {
	g, err := access.New(access.Config{Keys: []string{"", "plain"}, File: writeFile(t, `{"keys":[{"name":"filed","sha256":"`+sha("hashed-key")+`","allow":["add"]}]}`),
		Tag: func(ctx context.Context, name string) context.Context { return context.WithValue(ctx, tagKey{}, name) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.Names(), ","); got != "api-key-1,filed" {
		t.Errorf("names %q", got)
	}
	h := g.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(access.GrantFrom(r.Context()).Name() + " " + r.Context().Value(tagKey{}).(string)))
	}))
	for _, tc := range []struct {
		auth string
		code int
		body string
	}{
		{"Bearer plain", 200, "api-key-1 api-key-1"},
		{"bearer  hashed-key ", 200, "filed filed"},
		{"Bearer " + sha("hashed-key"), 401, `{"error":{"code":401,"message":"unauthorized: the API key is not valid"}}`},
		{"Bearer plai", 401, `{"error":{"code":401,"message":"unauthorized: the API key is not valid"}}`},
		{"", 401, `{"error":{"code":401,"message":"unauthorized: an API key is required (send Authorization: Bearer <key>)"}}`},
		{"Basic plain", 401, `{"error":{"code":401,"message":"unauthorized: an API key is required (send Authorization: Bearer <key>)"}}`},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("%q: %d %s, want %d %s", tc.auth, rec.Code, rec.Body, tc.code, tc.body)
		}
	}
	off, _ := access.New(access.Config{Keys: []string{""}})
	if off.Enabled() {
		t.Error("no keys: auth must be off")
	}
	if _, err := access.New(access.Config{Keys: []string{"dup"}, File: writeFile(t, `{"keys":[{"name":"x","key":"dup","allow":[]}]}`)}); err == nil || !strings.Contains(err.Error(), "$.keys[0]: the same key as --api-key") || strings.Contains(err.Error(), "dup\"") {
		t.Errorf("a file key equal to a plain key: %v", err)
	}
}

type tagKey struct{}

// TestLimit: a key's limiter allows its burst, then refuses with the
// limiter's own wait, and allows again once that wait has passed.
func TestLimit(t *testing.T) {
	g, err := access.New(access.Config{File: writeFile(t, `{"keys":[{"name":"r","key":"rk","allow":["*"],"rate":{"per_second":20,"burst":2}},{"name":"free","key":"fk","allow":["*"]}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := access.WithGrant(context.Background(), grantOf(t, g, "rk"))
	if !access.Limited(ctx) {
		t.Fatal("a key with a rate is not Limited")
	}
	if rf := access.Limit(ctx, 3); rf == nil || rf.RetryAfter != 100*time.Millisecond || !strings.Contains(rf.Message, "3 requests at once are more than its burst of 2") {
		t.Fatalf("3 at once on a burst of 2: %+v", rf)
	}
	for i := range 2 {
		if rf := access.Limit(ctx, 1); rf != nil {
			t.Fatalf("call %d of the burst refused (the refused 3 took tokens?)", i)
		}
	}
	rf := access.Limit(ctx, 1)
	if rf == nil || rf.RetryAfter <= 0 || rf.RetryAfter > 50*time.Millisecond || rf.Message != access.RateLimitedMessage {
		t.Fatalf("over the burst: %+v; want refused, wait within 1/20 s", rf)
	}
	time.Sleep(rf.RetryAfter) // the limiter's own timing (50 ms at most)
	if rf := access.Limit(ctx, 1); rf != nil {
		t.Errorf("after the wait: refused again (%+v)", rf)
	}
	free := access.WithGrant(context.Background(), grantOf(t, g, "fk"))
	if access.Limited(free) {
		t.Error("a key without a rate is Limited")
	}
	for range 100 {
		if rf := access.Limit(free, 1); rf != nil {
			t.Fatal("a key without a rate was limited")
		}
	}
	if rf := access.Limit(context.Background(), 1); rf != nil {
		t.Error("no grant was limited")
	}
	if access.RetryAfterSeconds(1100*time.Millisecond) != 2 || access.RetryAfterSeconds(time.Millisecond) != 1 || access.RetryAfterMs(1500*time.Microsecond) != 2 {
		t.Error("retry-after rounding")
	}
}

// TestReload: a reload puts new grants in force, keeps a key's limiter
// when its rate is unchanged, and a bad file changes nothing; Watch sees
// a file replaced by rename.
func TestReload(t *testing.T) {
	path := writeFile(t, `{"keys":[{"name":"r","key":"rk","allow":["add"],"rate":{"per_second":0.001,"burst":1}}]}`)
	g, err := access.New(access.Config{File: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := access.WithGrant(context.Background(), grantOf(t, g, "rk"))
	if rf := access.Limit(ctx, 1); rf != nil {
		t.Fatal("first call refused")
	}
	watchCtx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := g.Watch(watchCtx); err != nil {
		t.Fatal(err)
	}

	replace := func(body string) {
		t.Helper()
		changed := g.Changed()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no reload within 10 s of the file's replacement")
		}
	}
	replace(`{"keys":[{"name":"r","key":"rk","allow":["add","divide"],"rate":{"per_second":0.001,"burst":1}},{"name":"new","key":"nk","allow":[]}]}`)
	gr := grantOf(t, g, "rk")
	if !gr.Allows("calculator", "divide") {
		t.Error("reloaded grant does not allow divide")
	}
	if rf := access.Limit(access.WithGrant(context.Background(), gr), 1); rf == nil {
		t.Error("the reload reset the key's limiter (same rate)")
	}
	grantOf(t, g, "nk")

	replace(`{"keys":[{"name":"r","key":"rk","allow":["add"],"bogus":1}]}`)
	if !grantOf(t, g, "rk").Allows("calculator", "divide") {
		t.Error("a bad file changed the grants")
	}
	grantOf(t, g, "nk")
	if err := g.Reload(); err == nil || !strings.Contains(err.Error(), "$.keys[0].bogus: unknown member") {
		t.Errorf("Reload of a bad file: %v", err)
	}
}

// TestDocsKeysFileExample: the example keys file of docs/security.md parses.
func TestDocsKeysFileExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## API keys and access")
	_, block, ok2 := strings.Cut(sec, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no example keys file in docs/security.md")
	}
	f, err := access.ParseFile([]byte(block))
	if err != nil || len(f.Keys) != 4 {
		t.Fatalf("docs example: %v", err)
	}
}

// TestReloadRevokes: a reload revokes the grants of keys it removes or
// changes (their requests' contexts end with ErrRevoked) and keeps those
// of unchanged keys in force.
func TestReloadRevokes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"keys":[{"name":"a","key":"ka","allow":["*"]},{"name":"b","key":"kb","allow":["x"]},{"name":"c","key":"kc","allow":["y"]}]}`)
	g, err := access.New(access.Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	ctxs := map[string]context.Context{}
	release := make(chan struct{})
	started := make(chan struct{}, 3)
	h := g.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxs[r.Header.Get("Authorization")] = r.Context()
		started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	done := make(chan struct{}, 3)
	for _, k := range []string{"ka", "kb", "kc"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", "Bearer "+k)
		go func() { h.ServeHTTP(httptest.NewRecorder(), req); done <- struct{}{} }()
		<-started
	}
	// a unchanged, b removed, c's allow changed.
	write(`{"keys":[{"name":"a","key":"ka","allow":["*"]},{"name":"c","key":"kc","allow":["y","z"]}]}`)
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Bearer kb", "Bearer kc"} {
		select {
		case <-ctxs[k].Done():
			if !errors.Is(context.Cause(ctxs[k]), access.ErrRevoked) {
				t.Errorf("%s: cause %v, want ErrRevoked", k, context.Cause(ctxs[k]))
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: request not ended by the reload", k)
		}
	}
	if ctxs["Bearer ka"].Err() != nil {
		t.Error("the unchanged key's request was ended")
	}
	close(release)
	for range 3 {
		<-done
	}
}

// TestKeyNamesUnique (issue 30, finding 6): a keys file may not name a
// key after a plain key (--api-key, OPENTOOL_API_KEYS: "api-key-N"),
// whose tasks and audit records it would then share: the start is
// refused, and a reload that brings such a name keeps the keys in force;
// both errors name the file's entry and the plain keys.
func TestKeyNamesUnique(t *testing.T) {
	clash := `{"keys":[{"name":"ok","key":"k0","allow":[]},{"name":"api-key-1","key":"k1","allow":[]}]}`
	want := `$.keys[1].name: "api-key-1" is the name of a key given with --api-key or OPENTOOL_API_KEYS`
	_, err := access.New(access.Config{Keys: []string{"admin"}, File: writeFile(t, clash)})
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "api keys file") {
		t.Fatalf("start with a file key named api-key-1: %v", err)
	}
	path := writeFile(t, `{"keys":[{"name":"ok","key":"k0","allow":[]}]}`)
	g, err := access.New(access.Config{Keys: []string{"admin"}, File: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(clash), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reload with a file key named api-key-1: %v", err)
	}
	if got := strings.Join(g.Names(), ","); got != "api-key-1,ok" {
		t.Errorf("keys in force after the refused reload: %s", got)
	}
}

// TestGrantKeysInForce: a grant reports its guard's count of keys, which
// follows a reload (a key added), and 0 when made by NewGrant.
func TestGrantKeysInForce(t *testing.T) {
	path := writeFile(t, `{"keys":[{"name":"f","key":"fk","allow":["*"]}]}`)
	g, err := access.New(access.Config{Keys: []string{"plain-key"}, File: path})
	if err != nil {
		t.Fatal(err)
	}
	plain, file := grantOf(t, g, "plain-key"), grantOf(t, g, "fk")
	if plain.KeysInForce() != 2 || file.KeysInForce() != 2 {
		t.Fatalf("KeysInForce of the --api-key grant %d, of the file's %d: want 2", plain.KeysInForce(), file.KeysInForce())
	}
	if err := os.WriteFile(path, []byte(`{"keys":[{"name":"f","key":"fk","allow":["*"]},{"name":"n","key":"nk","allow":[]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := file.KeysInForce(); n != 3 {
		t.Errorf("KeysInForce after a key was added: %d, want 3", n)
	}
	if n := access.NewGrant("x", []string{"*"}).KeysInForce(); n != 0 {
		t.Errorf("KeysInForce of NewGrant's: %d, want 0", n)
	}
	var none *access.Grant
	if n := none.KeysInForce(); n != 0 {
		t.Errorf("KeysInForce of nil: %d, want 0", n)
	}
}
