package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// The client scenarios' runs, as the known-failures files name them.
const (
	clientDirect = "direct" // the Go SDK's everything-client alone
	clientHost   = "host"   // the same client through the host (viaHost)
)

// clientKnown is each edition's known failures of the client scenarios
// through the host, by package (edition.pkg).
var clientKnown = map[string]string{
	"@modelcontextprotocol/conformance": "known-failures-client.txt",
	"conformance-next":                  "known-failures-client-next.txt",
}

// viaHostEnv names the environment variable that makes the test binary
// the client of the suite's client scenarios through the host (viaHost):
// its value is a viaHostConfig in JSON.
const viaHostEnv = "OPENTOOL_CONFORMANCE_VIA_HOST"

// viaHostConfig is what viaHost runs.
type viaHostConfig struct {
	Host   string // the opentool-host binary
	Client string // the Go SDK's everything-client binary
	Dir    string // a folder for the runs' plugins folders and host logs
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(viaHostEnv); cfg != "" {
		os.Exit(viaHost(cfg, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestClientConformance runs each edition's client scenarios (all but
// the auth/ ones that need a person's login: those of the
// client-credentials extension are run) with the Go SDK's
// everything-client alone against the suite's test server, then through
// the host: the suite's server declared as a URL server in a plugins
// folder (upstream.mcp.json), the same client driving the host's /mcp
// (viaHost). It logs each edition's table and holds the run through the
// host to the client alone, with the edition's known failures
// (clientKnown) as the exceptions.
func TestClientConformance(t *testing.T) {
	root := testkit.RepoRoot(t)
	dir := filepath.Join(root, "conformance")
	suites := make([]*suite, len(editions))
	for i, e := range editions {
		suites[i] = newSuite(t, dir, e)
	}
	tmp := t.TempDir()
	client := goBuild(t, root, tmp, "everything-client", "github.com/modelcontextprotocol/go-sdk/conformance/everything-client")
	host := goBuild(t, root, tmp, "opentool-host", "./cmd/opentool-host")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(viaHostConfig{Host: host, Client: client, Dir: tmp})

	for _, s := range suites {
		known, err := ReadKnownFailures(filepath.Join(dir, clientKnown[s.pkg]), []string{clientHost})
		if err != nil {
			t.Fatal(err)
		}
		scenarios := s.clientScenarios(t)
		direct := s.runClient(t, scenarios, client, nil)
		via := s.runClient(t, scenarios, self, []string{viaHostEnv + "=" + string(cfg)})
		t.Logf("MCP client conformance, suite %s (%d scenarios: %s):\n%s", s.version, len(scenarios), strings.Join(scenarios, " "), Table([]string{clientDirect, clientHost}, []Run{direct, via}))
		t.Logf("suite %s: the client alone %d passed / %d failed, through the host %d / %d", s.version, direct.Total.Passed, direct.Total.Failed, via.Total.Passed, via.Total.Failed)
		for _, p := range Compare(direct, via, clientHost, known) {
			t.Errorf("suite %s: %s", s.version, p)
		}
	}
}

// clientLine is a client scenario in the suite's list.
var clientLine = regexp.MustCompile(`^\s+- (\S+) \[`)

// clientScenarios returns the client scenarios of the suite's list: the
// auth/ ones those of the client-credentials extension
// (clientCredentialsScenario), which need no person's login, and those
// of a login (loginScenario), the test as the person's browser.
func (s *suite) clientScenarios(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(s.node, s.cli, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("%s list: %v\n%s", s.cli, err, out)
	}
	_, section, ok := strings.Cut(string(out), "Client scenarios")
	if !ok {
		t.Fatalf("%s list: no client scenarios:\n%s", s.cli, out)
	}
	_, section, _ = strings.Cut(section, "\n") // the heading's end
	var names []string
	for _, line := range strings.Split(section, "\n") {
		m := clientLine.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "-") {
				break // the next section
			}
			continue
		}
		if !strings.HasPrefix(m[1], "auth/") || strings.HasPrefix(m[1], clientCredentialsScenario) || loginScenario(m[1]) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s list: no client scenarios:\n%s", s.cli, out)
	}
	return names
}

// runClient runs each scenario with `client --command command`, env
// added to the suite's environment (the client's), and returns their
// checks as one Run.
func (s *suite) runClient(t *testing.T, scenarios []string, command string, env []string) Run {
	t.Helper()
	dirs, outputs := make([]string, len(scenarios)), make([]string, len(scenarios))
	for i, scenario := range scenarios {
		dirs[i] = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
		cmd := exec.CommandContext(ctx, s.node, s.cli, "client", "--command", command, "--scenario", scenario, "-o", dirs[i])
		cmd.Dir = dirs[i]
		cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), env...)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("conformance client %s (%s): %v\n%s", scenario, command, err, out)
		}
		outputs[i] = string(out)
	}
	run, err := ReadClientRun(scenarios, dirs, outputs)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// viaHost is the test binary as the client of a client scenario: args
// are the suite's server URL; it declares that URL as a URL server in a
// new plugins folder under the config's Dir, starts the host on it, runs
// the everything-client (with the scenario's environment, inherited)
// against the host's /mcp once it is ready, stops the host and exits
// with the client's exit code (1 when it could not run it).
func viaHost(config string, args []string) int {
	var cfg viaHostConfig
	if err := json.Unmarshal([]byte(config), &cfg); err != nil || len(args) != 1 {
		fmt.Fprintf(os.Stderr, "viaHost: %s=%q, args %q: want the config and one URL (%v)\n", viaHostEnv, config, args, err)
		return 1
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	h, err := startViaHost(cfg, args[0], loginScenario(scenario))
	if err != nil {
		fmt.Fprintln(os.Stderr, "viaHost:", err)
		return 1
	}
	defer h.stop()
	if loginScenario(scenario) {
		return h.loginAndCall(cfg)
	}
	client := exec.Command(cfg.Client, h.url+"/mcp")
	client.Stdout, client.Stderr = os.Stdout, os.Stderr
	if strings.HasPrefix(scenario, clientCredentialsScenario) {
		// The host is the client of the scenario's flow; the client of the
		// host, which the everything-client does not know such a scenario
		// for, makes a plain session (connect, tools/list) through it.
		client.Env = append(os.Environ(), "MCP_CONFORMANCE_SCENARIO=initialize")
	}
	err = client.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "viaHost:", err)
		return 1
	}
	return 0
}

// viaHostProc is the host of one viaHost run.
type viaHostProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

// startViaHost writes a plugins folder declaring url as the server
// upstream, starts the host on it (its log in the folder beside it) and
// waits up to 30 s for GET /health?ready=1 to answer 200, or, for a
// login's scenario (login), for GET /oauth/status to list upstream.
func startViaHost(cfg viaHostConfig, url string, login bool) (*viaHostProc, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "via-host-")
	if err != nil {
		return nil, err
	}
	plugins := filepath.Join(dir, "plugins")
	decl, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"upstream": upstreamServer(url)}})
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(plugins, "upstream.mcp.json"), decl, 0o644); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logs, err := os.Create(filepath.Join(dir, "host.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Host, "run", "--dir", plugins, "--addr", addr, "--state-dir", filepath.Join(dir, "state"), "--drain-delay", "0", "--log-level", "debug")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &viaHostProc{cmd: cmd, url: "http://" + addr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logs.Close(); close(h.done) }()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	up := ready
	if login {
		up = loginListed
	}
	for !up(client, h.url) {
		select {
		case <-h.done:
			return nil, fmt.Errorf("the host exited before ready (log: %s)", logs.Name())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.stop()
			return nil, fmt.Errorf("the host not ready after 30 s (log: %s)", logs.Name())
		}
	}
	return h, nil
}

// clientCredentialsScenario is the prefix of the suite's scenarios of
// the client-credentials extension (SEP-1046): the host logs in to the
// suite's server by itself, with the client it registered.
const clientCredentialsScenario = "auth/client-credentials-"

// upstreamServer is the declaration of the suite's server at url: the url,
// and in a scenario of clientCredentialsScenario whose context
// (MCP_CONFORMANCE_CONTEXT) gives a client_id and a client_secret or a
// private_key_pem (auth/client-credentials-jwt), an "oauth" of the
// client-credentials grant with them ("privateKeyJwt" for the key).
func upstreamServer(url string) map[string]any {
	srv := map[string]any{"url": url}
	var ctx struct {
		ClientID      string `json:"client_id"`
		ClientSecret  string `json:"client_secret"`
		PrivateKeyPEM string `json:"private_key_pem"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &ctx)
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	switch {
	case strings.HasPrefix(scenario, clientCredentialsScenario) && ctx.ClientID != "" && ctx.PrivateKeyPEM != "":
		srv["oauth"] = map[string]any{"clientId": ctx.ClientID, "privateKeyJwt": map[string]any{"privateKey": ctx.PrivateKeyPEM}, "grant": "client_credentials", "issuer": pinnedIssuer(url)}
	case strings.HasPrefix(scenario, clientCredentialsScenario) && ctx.ClientID != "" && ctx.ClientSecret != "":
		srv["oauth"] = map[string]any{"clientId": ctx.ClientID, "clientSecret": ctx.ClientSecret, "grant": "client_credentials", "issuer": pinnedIssuer(url)}
	case loginScenario(scenario) && ctx.ClientID != "" && ctx.ClientSecret != "":
		srv["oauth"] = map[string]any{"clientId": ctx.ClientID, "clientSecret": ctx.ClientSecret, "issuer": pinnedIssuer(url)}
	case loginScenario(scenario):
		srv["oauth"] = map[string]any{} // registration by the host (DCR)
	}
	return srv
}

// pinnedIssuer is the issuer an operator would pin for the suite's
// server at url, as one learns it: the first authorization server of
// the Protected Resource Metadata its 401 names (RFC 9728), or of the
// well-known path; "" when there is none (the host then refuses the
// declaration, which the run shows).
func pinnedIssuer(url string) string {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return ""
	}
	resp.Body.Close()
	meta := ""
	if m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate")); m != nil {
		meta = m[1]
	} else if i := strings.Index(url[len("http://"):], "/"); i >= 0 {
		meta = url[:len("http://")+i] + "/.well-known/oauth-protected-resource" + url[len("http://")+i:]
	}
	resp, err = c.Get(meta)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&prm) != nil || len(prm.AuthorizationServers) == 0 {
		return ""
	}
	return prm.AuthorizationServers[0]
}

// loginScenario reports whether scenario is an auth/ scenario of the
// authorization code grant: the host logs in with a person's step
// (opentool-host auth login --no-browser), the test as the person's
// browser; the everything-client alone knows it (it registers a handler
// for every one of them but the extensions').
func loginScenario(scenario string) bool {
	if !strings.HasPrefix(scenario, "auth/") || strings.HasPrefix(scenario, clientCredentialsScenario) {
		return false
	}
	switch strings.TrimPrefix(scenario, "auth/") {
	case "enterprise-managed-authorization", "dpop", "dpop-nonce", "wif-jwt-bearer":
		return false // extensions the everything-client alone does not run
	}
	return true
}

// loginListed reports whether the host at url lists the login of
// upstream (GET /oauth/status).
func loginListed(client *http.Client, url string) bool {
	resp, err := client.Get(url + "/oauth/status")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"server":"upstream"`)
}

// maxLogins bounds the logins of one login scenario's run: the first,
// and one for each step up (403 insufficient_scope) the call asks.
const maxLogins = 3

// loginAndCall is a login scenario through the host, as the person and
// the client the everything-client is alone: `opentool-host auth login
// upstream --no-browser` prints the authorization URL, which the test
// follows as the person's browser (the suite's authorization server
// redirects at once to the host's /oauth/callback); once the host
// serves upstream's tools, the everything-client makes a session
// through /mcp (initialize, tools/list) and the test calls test-tool
// through /opentool/call, logging in again when the host says the server
// needs a login (a step up), up to maxLogins. It returns the exit code:
// 0 when the call succeeded.
func (h *viaHostProc) loginAndCall(cfg viaHostConfig) int {
	for i := 0; ; i++ {
		if err := h.login(cfg); err != nil && (i > 0 || !strings.Contains(err.Error(), "it asks for no login")) {
			fmt.Fprintln(os.Stderr, "viaHost: login:", err)
			return 1
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "viaHost: no login yet: the server asks for none before a call")
		}
		if i == 0 || !ready(&http.Client{Timeout: 5 * time.Second}, h.url) {
			if err := h.awaitReady(); err != nil && i+1 < maxLogins {
				// The token did not do for the host's own session (the
				// server's authorization server changed; a step up): log
				// in again, as /health asks.
				fmt.Fprintln(os.Stderr, "viaHost:", err)
				continue
			} else if err != nil {
				fmt.Fprintln(os.Stderr, "viaHost:", err)
			} else if err := h.runClient(cfg); err != nil {
				fmt.Fprintln(os.Stderr, "viaHost: the everything-client through the host:", err)
				return 1
			}
		}
		body, err := h.call("test-tool")
		if err == nil {
			return 0
		}
		if !strings.Contains(err.Error(), "opentool-host auth login upstream") || i+1 >= maxLogins {
			fmt.Fprintln(os.Stderr, "viaHost: test-tool:", err, body)
			return 1
		}
		fmt.Fprintln(os.Stderr, "viaHost: the host asks for a login again:", err)
	}
}

// runClient runs the everything-client's initialize scenario (connect,
// tools/list) through the host's /mcp.
func (h *viaHostProc) runClient(cfg viaHostConfig) error {
	client := exec.Command(cfg.Client, h.url+"/mcp")
	client.Stdout, client.Stderr = os.Stdout, os.Stderr
	client.Env = append(os.Environ(), "MCP_CONFORMANCE_SCENARIO=initialize")
	return client.Run()
}

// login runs `opentool-host auth login upstream --no-browser` against
// the host and follows the URL it prints, as the person's browser.
func (h *viaHostProc) login(cfg viaHostConfig) error {
	out, err := exec.Command(cfg.Host, "auth", "login", "upstream", "--no-browser", "--url", h.url).CombinedOutput()
	if err != nil {
		return fmt.Errorf("auth login: %v: %s", err, out)
	}
	var authURL string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "http") {
			authURL = strings.TrimSpace(line)
		}
	}
	if authURL == "" {
		return fmt.Errorf("auth login printed no URL: %s", out)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(authURL)
	if err != nil {
		return fmt.Errorf("the browser: %w", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the browser: %s: HTTP %d: %s", resp.Request.URL.Redacted(), resp.StatusCode, page)
	}
	return nil
}

// awaitReady waits up to 10 s for the host's readiness (upstream
// connected with its token).
func (h *viaHostProc) awaitReady() error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for !ready(client, h.url) {
		if time.Now().After(deadline) {
			return errors.New("the host not ready 10 s after the login")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// call calls fn with {} through the host's /opentool/call and returns
// the answer; a JSON-RPC error is the error.
func (h *viaHostProc) call(fn string) (string, error) {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Post(h.url+"/opentool/call", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","method":"`+fn+`","params":{},"id":"1"}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return string(b), err
	}
	if ans.Error != nil {
		return string(b), errors.New(ans.Error.Message)
	}
	return string(b), nil
}

// stop stops the host with SIGTERM, and kills it when it has not exited
// 10 s later.
func (h *viaHostProc) stop() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}
