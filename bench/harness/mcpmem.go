package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/process/keeper"
)

// MCPServerName is the plugin name of the i-th MCP server
// DeclareMCPServers declares ("notes1", "notes2", ...); its tools are
// served with the prefix MCPServerName(i)+"_".
func MCPServerName(i int) string { return "notes" + strconv.Itoa(i) }

// MCPServerTool is the tool of mcp-notes the benchmarks call, served as
// MCPServerName(i)+"_"+MCPServerTool behind a host: it takes
// {"text": STRING} and returns STRING as one text block.
const MCPServerTool = "repeat"

// MCPDeclaration is what DeclareMCPServers writes beside "command" in
// each declaration.
type MCPDeclaration struct {
	// Sessions is the "sessions" field: "shared" (every MCP client
	// reaches the one server process a measurement counts), "per-client",
	// or "" for none (the default, per-client, with the default
	// maxSessions).
	Sessions string
}

// DeclareMCPServers writes n MCP server declarations into the plugins
// folder dir, each running the command server (mcp-notes, no arguments)
// with the fields of d: MCPServerName(i).mcp.json and, so that their
// tools do not collide, MCPServerName(i).policy.json with the prefix
// MCPServerName(i)+"_", for i = 1..n. Errors: a file cannot be written.
func DeclareMCPServers(dir, server string, n int, d MCPDeclaration) error {
	field := ""
	if d.Sessions != "" {
		field += fmt.Sprintf(`,"sessions":%q`, d.Sessions)
	}
	for i := 1; i <= n; i++ {
		name := MCPServerName(i)
		decl := fmt.Sprintf(`{"mcpServers":{%q:{"command":%q,"args":[]%s}}}`, name, server, field)
		if err := os.WriteFile(filepath.Join(dir, name+".mcp.json"), []byte(decl), 0o644); err != nil {
			return err
		}
		policy := fmt.Sprintf(`{"prefix":%q}`, name+"_")
		if err := os.WriteFile(filepath.Join(dir, name+".policy.json"), []byte(policy), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// MCPServersMemory is one reading of MeasureMCPServers.
type MCPServersMemory struct {
	// Servers is the number of MCP servers declared.
	Servers int
	// Tree is the PSS of the host's process tree, split into the MCP
	// servers' processes and the host's own (host, keeper, adapters,
	// sandbox launchers).
	Tree TreeMemory
	// Ready is the time from the host's start until all servers were
	// ready (GET /health).
	Ready time.Duration
	// KeeperRSSKiB is the RSS in KiB of the host's keeper process
	// (KeeperRSSKiB), -1 when the host runs none.
	KeeperRSSKiB int64
}

// mcpProbeText is the text MeasureMCPServers sends each server's
// MCPServerTool.
const mcpProbeText = "pss-probe"

// MeasureMCPServers starts hostBin ("opentool-host run", 127.0.0.1 only)
// on a fresh plugins folder under dir declaring n MCP servers
// (DeclareMCPServers, running server, shared). Both binaries run as private
// copies (the host with its keeper: CopyHost), so that no process outside
// this host (another host of the same
// run, a stdio client's server) shares their pages and lowers the PSS
// read. It waits until all n are ready (GET
// /health, up to 30 s + 1 s per server), calls each one's MCPServerTool once
// over POST /opentool/call (so that every server and the host's path to
// it have served a call), reads the PSS of the host's process tree with
// the processes running server counted apart (TreePSS) and the keeper's
// RSS (KeeperRSSKiB), and stops the
// host (SIGTERM, up to 10 s). Errors: the host does not start, a server is
// not ready in time or its MCPServerTool call fails, /proc cannot be read, or
// the host does not stop cleanly; each includes the host's output.
func MeasureMCPServers(hostBin, server, dir string, n int) (MCPServersMemory, error) {
	m := MCPServersMemory{Servers: n}
	work, err := os.MkdirTemp(dir, "mcp-servers-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(work)
	plugins := filepath.Join(work, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		return m, err
	}
	if hostBin, err = CopyHost(hostBin, work); err != nil {
		return m, err
	}
	if server, err = CopyExecutable(server, filepath.Join(work, "mcp-notes")); err != nil {
		return m, err
	}
	prog, err := NewProgram(server)
	if err != nil {
		return m, err
	}
	if err := DeclareMCPServers(plugins, server, n, MCPDeclaration{Sessions: "shared"}); err != nil {
		return m, err
	}
	p, err := StartHostProcess(hostBin, HostOptions{Dir: plugins, StateDir: filepath.Join(work, "state")})
	if err != nil {
		return m, err
	}
	err = measureHost(p, prog, &m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(err, p.Stop(ctx))
	if err != nil {
		return m, fmt.Errorf("%d MCP servers: %w\nhost output:\n%s", n, err, p.Output())
	}
	return m, nil
}

// measureHost is MeasureMCPServers once the host process p runs.
func measureHost(p *HostProcess, prog *Program, m *MCPServersMemory) error {
	c := NewHTTPClient(1, 10*time.Second)
	defer c.CloseIdleConnections()
	ready, err := WaitHealthy(p, c, m.Servers, 30*time.Second+time.Duration(m.Servers)*time.Second)
	if err != nil {
		return err
	}
	m.Ready = ready
	url := p.URL() + opentoolapi.BasePath + "/call"
	args := []byte(`{"text":"` + mcpProbeText + `"}`)
	var buf bytes.Buffer
	for i := 1; i <= m.Servers; i++ {
		fn := MCPServerName(i) + "_" + MCPServerTool
		st, resp, err := Post(context.Background(), c, url, CallBody(fn, args, i), &buf)
		if err != nil {
			return fmt.Errorf("%s: %w", fn, err)
		}
		if st != http.StatusOK || !bytes.Contains(resp, []byte(`"result"`)) || !bytes.Contains(resp, []byte(mcpProbeText)) {
			return fmt.Errorf("%s: HTTP %d: %.300s", fn, st, resp)
		}
	}
	m.KeeperRSSKiB = KeeperRSSKiB(p.PID())
	m.Tree, err = TreePSS(p.PID(), prog)
	if err == nil && m.Tree.Programs != m.Servers {
		err = fmt.Errorf("%d processes run %s under the host, want %d", m.Tree.Programs, prog.path, m.Servers)
	}
	return err
}

// KeeperRSSKiB returns the RSS in KiB (VmRSS) of the keeper of the host
// process host: its child whose command line is "PROGRAM keeper ..."
// (keeper.Command; the small keeper program or the host's binary), or
// -1 when it has none or its RSS cannot be read.
func KeeperRSSKiB(host int) int64 {
	for _, pid := range ProcTree(host) {
		if _, ppid := ProcState(pid); ppid != host {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if args := strings.Split(string(b), "\x00"); err == nil && len(args) > 1 && args[1] == keeper.Command {
			return ReadProcStats(pid).RSSKiB
		}
	}
	return -1
}
