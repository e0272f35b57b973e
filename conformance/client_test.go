package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// clientScenarios returns the client scenarios of the suite's list, the
// auth/ ones left out but those of the client-credentials extension
// (clientCredentialsScenario), which need no person's login.
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
		if !strings.HasPrefix(m[1], "auth/") || strings.HasPrefix(m[1], clientCredentialsScenario) {
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
	h, err := startViaHost(cfg, args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "viaHost:", err)
		return 1
	}
	defer h.stop()
	client := exec.Command(cfg.Client, h.url+"/mcp")
	client.Stdout, client.Stderr = os.Stdout, os.Stderr
	if strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), clientCredentialsScenario) {
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
// waits up to 30 s for GET /health?ready=1 to answer 200.
func startViaHost(cfg viaHostConfig, url string) (*viaHostProc, error) {
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
	for !ready(client, h.url) {
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
// (MCP_CONFORMANCE_CONTEXT) gives a client_id and client_secret, an
// "oauth" of the client-credentials grant with them.
func upstreamServer(url string) map[string]any {
	srv := map[string]any{"url": url}
	var ctx struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &ctx)
	if strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), clientCredentialsScenario) && ctx.ClientID != "" && ctx.ClientSecret != "" {
		srv["oauth"] = map[string]any{"clientId": ctx.ClientID, "clientSecret": ctx.ClientSecret, "grant": "client_credentials"}
	}
	return srv
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
