package mcpadapter

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// InitTimeout bounds starting the server, initialize and the first
// tools/list. The host's own start timeout (--start-timeout) is usually
// shorter: Load then reports the server as not answering just before it.
const InitTimeout = 60 * time.Second

// Serve runs the adapter process for MCP server l and never returns
// normally: it serves the server's tools as a plugin (pluginsdk.Serve)
// while it connects, and exits with status 1 when the server exits or its
// session ends, so that the host restarts it with backoff like any
// crashed plugin.
func Serve(l decl.Launch, log hclog.Logger) {
	a := New(l, log)
	go a.supervise()
	pluginsdk.ServeWithConfig(a, pluginsdk.ServeConfig{Logger: log})
}

// supervise connects, then waits for the session to end and exits.
func (a *Adapter) supervise() {
	cs, err := a.Connect(context.Background(), InitTimeout)
	if err != nil {
		a.log.Error("MCP server not connected", "error", err) // Load reports it to the host
		return
	}
	err = cs.Wait()
	status := "session closed"
	if a.cmd != nil && a.cmd.ProcessState != nil {
		status = a.cmd.ProcessState.String()
	}
	fmt.Fprintf(os.Stderr, "adapter: MCP server %q ended (%s): %v\n", a.launch.Name, status, err)
	os.Exit(1)
}
