package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/access/oauth/oauthtest"
	"github.com/opentool-host/opentool-host/testkit/base"
)

// authClients is the number of MCP client sessions of
// BenchmarkMCPAuth, as the targets' concurrent rows.
const authClients = 64

// The credentials of BenchmarkMCPAuth's sub-benchmarks (auth=...).
const (
	authKey = "api-key"
	authJWT = "jwt"
)

// targetAuthJWT is the goal of calls/s /mcp with a JWT over /mcp with an
// API key, 64 clients (the token's validation cached, no issuer round
// trip per call).
const targetAuthJWT = 0.9

// authRun is one timed run of BenchmarkMCPAuth: its credential
// (authKey, authJWT), calls/s and the GETs of the issuer's JWKS made
// during it.
type authRun struct {
	auth        string
	callsPerS   float64
	jwksFetches int64
}

// authRuns are BenchmarkMCPAuth's runs, the last of each b (its final
// one, as results), guarded by resultsMu.
var authRuns = map[*testing.B]authRun{}

// BenchmarkMCPAuth measures /mcp tools/call of the echo plugin (16B)
// at authClients MCP sessions with an API key against the same with an
// OAuth access token (a JWT, RFC 9068), both on one real
// "opentool-host run" process started with --api-key,
// --oauth-issuer of an oauthtest issuer in this process,
// --oauth-resource http://ADDR/mcp and a keys file whose "tokens" rule
// grants the token's scope the echo plugin. Its sub-benchmarks
// auth=api-key and auth=jwt report calls/s and p50-µs, and auth=jwt the
// JWKS fetches during its timed run (jwks-fetches: 0 when validation is
// cached per token); the summary's targets table gives their ratio
// (targetAuthJWT). Run it alone with BENCHFLAGS='-bench MCPAuth'.
func BenchmarkMCPAuth(b *testing.B) {
	setup(b)
	is := oauthtest.New(b)
	h, resource := startAuthHost(b, is.URL)
	token := is.Token(b, map[string]any{"iss": is.URL, "sub": "bench", "aud": resource, "scope": "bench",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	params := harness.Params(16)
	call := harness.MCPCallBody("echo", params, 1)
	want := `"structuredContent":{"echo":` + string(params) + `}`
	for _, c := range []struct{ name, bearer string }{{authKey, benchAPIKey}, {authJWT, token}} {
		b.Run("auth="+c.name, func(b *testing.B) {
			run := func(n int, warm bool) (harness.LoadResult, error) {
				return env.lg.Run(harness.LoadRequest{URL: h.URL() + mcpapi.Path, Body: call, Clients: authClients, N: n, Warm: warm,
					Contains: want, MCP: &harness.MCPLoad{Sessions: true}, Authorization: "Bearer " + c.bearer})
			}
			if _, err := run(0, true); err != nil { // sessions and connections opened, the token validated once
				b.Fatalf("%v\n%s", err, h.Output())
			}
			fetches := is.JWKSFetches.Load()
			b.ResetTimer()
			res, err := run(b.N, false)
			b.StopTimer()
			if err != nil {
				b.Fatalf("%v\n%s", err, h.Output())
			}
			r := authRun{auth: c.name, callsPerS: float64(b.N) / res.Elapsed.Seconds(), jwksFetches: is.JWKSFetches.Load() - fetches}
			b.ReportMetric(r.callsPerS, "calls/s")
			b.ReportMetric(float64(res.P50.Nanoseconds())/1e3, "p50-µs")
			if c.name == authJWT {
				b.ReportMetric(float64(r.jwksFetches), "jwks-fetches")
			}
			resultsMu.Lock()
			authRuns[b] = r
			resultsMu.Unlock()
		})
	}
}

// benchAPIKey is BenchmarkMCPAuth's --api-key.
const benchAPIKey = "bench-key-7d1f0c"

// startAuthHost starts the host of BenchmarkMCPAuth on a work folder of
// its own under env.tmp, serving a copy of the echo plugin, and waits
// until the plugin is ready and the host refuses a request without a
// credential (401); it returns the host and its --oauth-resource. The
// host is stopped at the end of b.
func startAuthHost(b *testing.B, issuer string) (*harness.HostProcess, string) {
	b.Helper()
	work, err := os.MkdirTemp(env.tmp, "auth-host-")
	if err != nil {
		b.Fatal(err)
	}
	plugins := filepath.Join(work, "plugins")
	keys := filepath.Join(work, "keys.json")
	rules := `{"keys": [], "tokens": [{"name": "bench", "scopes": ["bench"], "allow": ["plugin:echo"]}]}`
	addr, err := base.FreeAddr()
	if err == nil {
		err = os.Mkdir(plugins, 0o755)
	}
	if err == nil {
		_, err = harness.CopyExecutable(filepath.Join(env.tmp, "plugins", "opentool-plugin-echo"), filepath.Join(plugins, "opentool-plugin-echo"))
	}
	if err == nil {
		err = os.WriteFile(keys, []byte(rules), 0o600)
	}
	if err != nil {
		b.Fatal(err)
	}
	resource := "http://" + addr + mcpapi.Path
	h, err := harness.StartHostProcess(env.hostBin, harness.HostOptions{Dir: plugins, StateDir: filepath.Join(work, "state"), Addr: addr,
		Args: []string{"--api-key", benchAPIKey, "--api-keys-file", keys, "--oauth-issuer", issuer, "--oauth-resource", resource}})
	if err != nil {
		b.Fatal(err)
	}
	stopAtEnd(b, h, "BenchmarkMCPAuth")
	hc := harness.WithAuthorization(harness.NewHTTPClient(1, 10*time.Second), "Bearer "+benchAPIKey)
	defer hc.CloseIdleConnections()
	if _, err := harness.WaitHealthy(h, hc, 1, 30*time.Second); err != nil {
		b.Fatalf("%v\n%s", err, h.Output())
	}
	// The host must refuse a caller without a credential: else the rows
	// would measure an open host.
	resp, err := http.Post(resource, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		b.Fatalf("POST /mcp without a credential: HTTP %d, want 401", resp.StatusCode)
	}
	return h, resource
}

// printAuthTargets prints BenchmarkMCPAuth's rows of the targets table:
// calls/s with a JWT over calls/s with an API key (medians of the runs),
// and the JWKS fetches during the timed JWT runs (summed).
func printAuthTargets(w io.Writer) {
	var key, jwt []authRun
	var fetches int64
	for _, r := range authRuns {
		if r.auth == authKey {
			key = append(key, r)
		} else {
			jwt = append(jwt, r)
			fetches += r.jwksFetches
		}
	}
	if len(key) == 0 || len(jwt) == 0 {
		return
	}
	calls := func(r authRun) float64 { return r.callsPerS }
	k, j := median(key, calls), median(jwt, calls)
	fmt.Fprintf(w, "| %d clients, 16B: calls/s /mcp (sessions) with a JWT / with an API key | %.0f / %.0f = %.2f× | ≥ %.1f× | %s |\n",
		authClients, j, k, j/k, targetAuthJWT, mark(j/k >= targetAuthJWT))
	fmt.Fprintf(w, "| %d clients, 16B, /mcp with a JWT: JWKS fetches from the issuer during the timed calls | %d | 0 | %s |\n",
		authClients, fetches, mark(fetches == 0))
}

// stopAtEnd stops host process h at the end of b (SIGTERM, then SIGKILL
// after 10 s); an unclean stop is printed with the host's output, under
// the name of the benchmark it served.
func stopAtEnd(b *testing.B, h *harness.HostProcess, name string) {
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "the host of %s: %v\n%s", name, err, h.Output())
		}
	})
}
