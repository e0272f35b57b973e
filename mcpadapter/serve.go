package mcpadapter

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// exitGrace is how long a process whose connection attempt failed waits
// before it exits: time for Load's answer, which carries the reason, to
// reach the host (which then stops the process itself).
const exitGrace = time.Second

// Serve runs the adapter process for MCP server l (the decl.Launch the
// host put in decl.EnvLaunch) and never returns: it serves the server's
// tools as a plugin (pluginsdk.ServeWithConfig, logging to log) while
// Run connects, and when Run returns it logs the reason (on stderr,
// which the host logs under the plugin's name and keeps for /health)
// and exits with status 1, so that the host restarts it with backoff
// like any crashed plugin. Run by hand (without the host's handshake) it
// exits with status 2 before starting anything.
func Serve(l decl.Launch, log hclog.Logger) {
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "adapter: this command is run by opentool-host for each server declared in a NAME.mcp.json file; it is not meant to be run by hand")
		os.Exit(2)
	}
	a := New(l, log, Options{})
	go exitAfter(a, log)
	pluginsdk.ServeWithConfig(a, pluginsdk.ServeConfig{Logger: log})
	os.Exit(0) // the host closed the connection
}

// exitAfter runs a and exits the process with status 1 when Run returns.
func exitAfter(a *Adapter, log hclog.Logger) {
	err := a.Run(context.Background())
	log.Error(err.Error())
	if a.cs == nil { // the attempt failed: let Load's answer reach the host
		time.Sleep(exitGrace)
	}
	os.Exit(1)
}
