package mcpadapter

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/internal/testutil"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// adapterProc is the real adapter process ("opentool-host adapter", which
// calls Serve) under a go-plugin client, as the host starts it.
type adapterProc struct {
	client *plugin.Client
	tool   *wire.Client
	stderr *testutil.SyncBuffer // the process's stderr
	log    *testutil.SyncBuffer // go-plugin's client log (it logs the exit status)
}

// startAdapterProc starts the host binary's adapter for l and performs
// the go-plugin handshake.
func startAdapterProc(t *testing.T, l decl.Launch) *adapterProc {
	t.Helper()
	bin := testutil.Build(t, "./cmd/opentool-host")
	p := &adapterProc{stderr: &testutil.SyncBuffer{}, log: &testutil.SyncBuffer{}}
	cmd := exec.Command(bin, "adapter")
	cmd.Env = []string{decl.EnvLaunch + "=" + l.Encode()}
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.PluginSet(nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Cmd:              cmd,
		AutoMTLS:         true, // as the host: the SDK serves only over AutoMTLS
		SkipHostEnv:      true,
		Stderr:           p.stderr,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: p.log, Level: hclog.Debug}),
		StartTimeout:     bound,
	})
	t.Cleanup(p.client.Kill)
	rpc, err := p.client.Client()
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, p.stderr.String())
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	p.tool = raw.(*wire.Client)
	return p
}

// waitExit1 waits for the process to exit by itself with status 1 and
// reason on its stderr.
func (p *adapterProc) waitExit1(t *testing.T, reason string) {
	t.Helper()
	testutil.Eventually(t, bound, "adapter process exited", p.client.Exited)
	testutil.Eventually(t, bound, "exit logged", func() bool { return strings.Contains(p.log.String(), "plugin process exited") })
	if !strings.Contains(p.log.String(), `error="exit status 1"`) {
		t.Errorf("adapter did not exit with status 1:\n%s", p.log.String())
	}
	if !strings.Contains(p.stderr.String(), reason) {
		t.Errorf("adapter's stderr lacks %q:\n%s", reason, p.stderr.String())
	}
}

func TestServeExitsWhenTheServerExits(t *testing.T) {
	p := startAdapterProc(t, notesLaunch(t, "--exit-after", "1500ms"))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := p.tool.Load(ctx); err != nil {
		t.Fatalf("Load: %v", err)
	}
	p.waitExit1(t, `MCP server \"notes\" exited (exit status 3)`)
	if !strings.Contains(p.stderr.String(), "mcp-notes: serving MCP on stdio") {
		t.Errorf("the server's stderr is not the adapter's:\n%s", p.stderr.String())
	}
}

func TestServeExitsWhenInitializeIsNotAnswered(t *testing.T) {
	p := startAdapterProc(t, notesLaunch(t, "--hang-initialize"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := p.tool.Load(ctx)
	var te *wire.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Message, `MCP server "notes" did not answer initialize within 1.`) {
		t.Fatalf("Load = %v", err)
	}
	p.waitExit1(t, `MCP server \"notes\" did not answer initialize within 1.`)
	waitNoChild(t, "--hang-initialize")
}

func TestServeByHand(t *testing.T) {
	bin := testutil.Build(t, "./cmd/opentool-host")
	cmd := exec.Command(bin, "adapter")
	cmd.Env = []string{decl.EnvLaunch + "=" + notesLaunch(t).Encode()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not meant to be run by hand") {
		t.Fatalf("adapter run by hand: %v\n%s", err, out)
	}
}
