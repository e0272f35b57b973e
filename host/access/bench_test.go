package access_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/access/oauth/oauthtest"
)

// BenchmarkFilterListing is the predicate's share of filtering one
// listing of 1000 functions over 50 plugins for a key with four patterns
// (what /opentool/load, /otc/tools, export and MCP tools/list add per
// request for a restricted key).
func BenchmarkFilterListing(b *testing.B) {
	g, err := access.New(access.Config{File: writeFile(b, `{"keys":[{"name":"k","key":"k","allow":["add","fs_*","plugin:calc?","plugin:mock"]}]}`)})
	if err != nil {
		b.Fatal(err)
	}
	gr := grantOf(b, g, "k")
	type fn struct{ plugin, name string }
	fns := make([]fn, 1000)
	for i := range fns {
		fns[i] = fn{fmt.Sprintf("plugin%d", i%50), fmt.Sprintf("function_%d", i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, f := range fns {
			if gr.Allows(f.plugin, f.name) {
				n++
			}
		}
	}
}

// BenchmarkAuthenticate is the guard's cost per request for an API key
// and for a JWT access token already validated once (the cache: no
// signature check, no issuer round trip), 64 requests at once.
func BenchmarkAuthenticate(b *testing.B) {
	is := oauthtest.New(b)
	g, _ := tokenGuard(b, is, tokenRules)
	for _, tc := range []struct{ name, bearer string }{
		{"key", "the-api-key"},
		{"jwt", tokenOf(b, is, map[string]any{"scope": "calc"})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := g.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			if rec, gr := serve(g, tc.bearer); gr == nil {
				b.Fatalf("refused: %d", rec.Code)
			}
			b.ReportAllocs()
			b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
				for pb.Next() {
					h.ServeHTTP(httptest.NewRecorder(), req)
				}
			})
		})
	}
}
