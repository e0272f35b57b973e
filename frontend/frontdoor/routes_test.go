package frontdoor_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/testkit"
)

// scopes is a frontdoor.ResultScoper that counts the scopes it gives,
// by path.
type scopes struct {
	mu    sync.Mutex
	paths map[string]int
}

func (s *scopes) WithResultScope(ctx context.Context) (context.Context, func()) {
	return context.WithValue(ctx, scopeKey{}, s), func() {}
}

type scopeKey struct{}

func (s *scopes) count(r *http.Request) {
	if r.Context().Value(scopeKey{}) == s {
		s.mu.Lock()
		s.paths[r.URL.Path]++
		s.mu.Unlock()
	}
}

func (s *scopes) of(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[path]
}

// TestRouteDeclarationIsEnough: a front end the front door has never
// heard of (the "/widget" routes below, declared here and nowhere else)
// gets from its declarations alone the mux, the keys (Public routes
// without), its span names, its refusals in its own format under its
// segment, its stream cap, its result scope, its rate limit's refusal
// and the readiness probe.
func TestRouteDeclarationIsEnough(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, []byte(`{"keys":[{"name":"k","key":"wk","allow":["*"]},{"name":"r","key":"rk","allow":["*"],"rate":{"per_second":0.001,"burst":1}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := access.New(access.Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	sc := &scopes{paths: map[string]int{}}
	entered, release := make(chan struct{}, 4), make(chan struct{})
	widgetRefuse := func(w http.ResponseWriter, _ *http.Request, status int, msg string) {
		httpguard.Write(w, status, httpguard.JSON, []byte(`{"widget_error":`+strconv.Quote(msg)+`}`), httpguard.DefaultWriteTimeout)
	}
	ok := func(w http.ResponseWriter, r *http.Request) {
		sc.count(r)
		_, _ = w.Write([]byte("ok " + r.PathValue("id")))
	}
	routes := []route.Route{
		{Pattern: "POST /widget/make", Handler: http.HandlerFunc(ok), HoldsResults: true, Refuse: widgetRefuse,
			Meter: func(*http.Request) (int, func(http.ResponseWriter, *http.Request, *access.Refusal)) {
				return 1, func(w http.ResponseWriter, _ *http.Request, rf *access.Refusal) {
					httpguard.Write(w, http.StatusTeapot, httpguard.JSON, []byte(`{"widget_limited":true}`), httpguard.DefaultWriteTimeout)
				}
			}},
		{Pattern: "GET /widget/items/{id}", Handler: http.HandlerFunc(ok), Refuse: widgetRefuse},
		{Pattern: "GET /widget/watch", Stream: route.Always, Refuse: widgetRefuse, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			entered <- struct{}{}
			<-release
		})},
		{Pattern: "GET /widget-page", Handler: http.HandlerFunc(ok), Public: true},
		{Pattern: "GET /widget-health", Handler: http.HandlerFunc(ok), Readiness: true},
	}
	var spans sync.Map // "METHOD path" of the request → span name
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ready := &frontdoor.Readiness{Plugins: (&testkit.StatesBackend{}).Plugins}
	h, err := frontdoor.Handler(routes, frontdoor.Chain{
		Trace: func(next http.Handler, spanName func(*http.Request) string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				spans.Store(r.Method+" "+r.URL.Path, spanName(r))
				next.ServeHTTP(w, r)
			})
		},
		Readiness: ready,
		Guard:     &httpguard.RequestGuard{Listen: ln.Addr()},
		Auth:      guard.Middleware,
		Streams:   &frontdoor.Streams{Max: 1, MaxPerKey: 1},
		Results:   sc,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { close(release); _ = srv.Close() })
	base := "http://" + ln.Addr().String()
	key := "Authorization: Bearer wk"
	json := "Content-Type: application/json"

	for _, c := range []struct {
		what, method, path string
		headers            []string
		code               int
		body               string
	}{
		{"a call with the key", "POST", "/widget/make", []string{key, json}, 200, "ok "},
		{"a path value", "GET", "/widget/items/7", []string{key}, 200, "ok 7"},
		{"no key", "GET", "/widget/items/7", nil, 401, ""},
		{"an unknown path, no key", "GET", "/widget/nothing", nil, 401, ""},
		{"an unknown path, with the key", "GET", "/widget/nothing", []string{key}, 404, ""},
		{"another method, with the key", "GET", "/widget/make", []string{key}, 405, ""},
		{"public, no key", "GET", "/widget-page", nil, 200, "ok "},
		{"a foreign Origin: the widget's refusal", "GET", "/widget/items/7", []string{key, "Origin: http://evil.example"}, 403, "widget_error"},
		{"a foreign Origin on an unknown widget path", "GET", "/widget/nothing", []string{key, "Origin: http://evil.example"}, 403, "widget_error"},
		{"a foreign Origin elsewhere: the plain refusal", "GET", "/widget-page", []string{"Origin: http://evil.example"}, 403, `{"error":{"code":403`},
		{"a form POST: the widget's refusal", "POST", "/widget/make", []string{key, "Content-Type: text/plain"}, 415, "widget_error"},
		{"readiness, no key, any Host", "GET", "/widget-health?ready=1", []string{"Host: pod.internal"}, 200, `{"status":"ready"}`},
		{"health without ready needs the key", "GET", "/widget-health", nil, 401, ""},
		{"a rate-limited key: the widget's refusal", "POST", "/widget/make", []string{"Authorization: Bearer rk", json}, 200, "ok "},
		{"over its rate", "POST", "/widget/make", []string{"Authorization: Bearer rk", json}, 418, `{"widget_limited":true}`},
	} {
		code, _, body := rawRequest(t, c.method, base+c.path, "{}", c.headers...)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("%s: %s %s: %d %s, want %d %s", c.what, c.method, c.path, code, body, c.code, c.body)
		}
	}
	if n := sc.of("/widget/make"); n != 2 {
		t.Errorf("POST /widget/make ran in %d result scopes, want 2 (HoldsResults)", n)
	}
	if n := sc.of("/widget/items/7"); n != 0 {
		t.Errorf("GET /widget/items/7 ran in %d result scopes, want none", n)
	}

	// The stream cap: one stream open, the second refused in the
	// widget's format.
	req, _ := http.NewRequest(http.MethodGet, base+"/widget/watch", nil)
	req.Header.Set("Authorization", "Bearer wk")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-entered
	code, hdr, body := rawRequest(t, http.MethodGet, base+"/widget/watch", "", key)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "widget_error") || hdr.Get("Retry-After") != "1" {
		t.Errorf("a second stream over the cap of 1: %d %s (Retry-After %q), want 429 in the widget's format", code, body, hdr.Get("Retry-After"))
	}

	for req, want := range map[string]string{
		"POST /widget/make":   "POST /widget/make",
		"GET /widget/items/7": "GET /widget/items/{id}",
		"GET /widget/nothing": "GET other",
		"GET /widget-page":    "GET /widget-page",
		"GET /widget-health":  "GET /widget-health",
		"GET /widget/watch":   "GET /widget/watch",
		"GET /widget/make":    "GET other",
	} {
		if got, _ := spans.Load(req); got != want {
			t.Errorf("span of %s: %v, want %q", req, got, want)
		}
	}
}

// TestNoPathLiteralInFrontDoor: the front door keys no behaviour by a
// path: no string literal of its non-test files is a path ("/..."), nor
// does it name a front end's path constant. Every path is a front end's
// declaration (route.Route).
func TestNoPathLiteralInFrontDoor(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && strings.HasPrefix(s, "/") {
					t.Errorf("%s: path literal %s: declare it in its front end's routes (route.Route)", fset.Position(n.Pos()), n.Value)
				}
			case *ast.SelectorExpr:
				if s := n.Sel.Name; s == "Path" || s == "TasksPath" || s == "EventsPath" || s == "StatusPath" || s == "PagePath" || s == "FilesPath" || s == "HealthPath" {
					if x, ok := n.X.(*ast.Ident); ok && x.Name != "route" {
						t.Errorf("%s: %s.%s keys behaviour by a front end's path: declare it in its routes", fset.Position(n.Pos()), x.Name, s)
					}
				}
			}
			return true
		})
	}
}
