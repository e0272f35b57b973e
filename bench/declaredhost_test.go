package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
)

// declaredHost is a real "opentool-host run" process serving one
// mcp-notes declared in its plugins folder (notes1.mcp.json, its tools
// prefixed notes1_), on a work folder of its own under env.tmp.
type declaredHost struct {
	*harness.HostProcess
	// prog recognises the processes running mcp-notes (TreePSS).
	prog *harness.Program
	work string
}

// startDeclaredHost starts a declaredHost whose declaration has the
// fields of d (harness.MCPDeclaration: none for the defaults) and waits until the server is
// ready (GET /health, up to 30 s). Both binaries run as copies of their
// own in the work folder, so that no process outside this host (another
// host of the run, a stdio client's server) shares their pages and
// lowers the PSS read. It fails b when any step fails.
func startDeclaredHost(b *testing.B, d harness.MCPDeclaration) *declaredHost {
	b.Helper()
	work, err := os.MkdirTemp(env.tmp, "mcp-host-")
	if err != nil {
		b.Fatal(err)
	}
	h := &declaredHost{work: work}
	plugins := filepath.Join(work, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		h.remove()
		b.Fatal(err)
	}
	hostBin, err := harness.CopyHost(env.hostBin, work)
	if err == nil {
		var server string
		if server, err = harness.CopyExecutable(env.notesBin, filepath.Join(work, "mcp-notes")); err == nil {
			if h.prog, err = harness.NewProgram(server); err == nil {
				err = harness.DeclareMCPServers(plugins, server, 1, d)
			}
		}
	}
	if err == nil {
		h.HostProcess, err = harness.StartHostProcess(hostBin, harness.HostOptions{Dir: plugins, StateDir: filepath.Join(work, "state")})
	}
	if err != nil {
		h.remove()
		b.Fatal(err)
	}
	hc := harness.NewHTTPClient(1, 10*time.Second)
	defer hc.CloseIdleConnections()
	if _, err := harness.WaitHealthy(h, hc, 1, 30*time.Second); err != nil {
		_ = h.stop()
		b.Fatalf("%v\n%s", err, h.Output())
	}
	return h
}

// stop stops the host (SIGTERM, then SIGKILL after 10 s) and removes its
// work folder. Errors: the host did not stop cleanly (Stop).
func (h *declaredHost) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.Stop(ctx)
	h.remove()
	return err
}

// remove removes the work folder.
func (h *declaredHost) remove() { _ = os.RemoveAll(h.work) }

// median returns the median of get over rs (the upper one of an even
// count); rs must not be empty.
func median[T any](rs []T, get func(T) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = get(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}
