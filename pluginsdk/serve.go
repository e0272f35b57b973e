package pluginsdk

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/opentool-host/opentool-host/internal/wire"
)

// ServeConfig tunes Serve. The zero value is what Serve uses.
type ServeConfig struct {
	// Logger is the plugin's logger; its output goes to stderr, which the
	// host logs under the plugin's name. Default: JSON hclog at trace level,
	// so the host's --log-level decides what is shown.
	Logger hclog.Logger

	// ParentWatchInterval is how often the plugin checks that the host that
	// started it is still alive; when the host is gone the plugin exits.
	// This is a second guard beside the host's parent-death signal.
	// Default 200 ms; negative disables the watch.
	ParentWatchInterval time.Duration
}

// Serve runs tool as an opentool-host plugin and never returns normally: it
// performs the go-plugin handshake on stdout and serves the Tool gRPC
// service until the host closes the connection or dies. Call it from main.
// A binary run by hand (without the host's magic cookie) prints a notice
// and exits with status 1; so does one started with the cookie but
// without the host's AutoMTLS certificate (ClientCertEnv), which would
// otherwise serve its socket to any process. Connections to the socket
// that do not authenticate as the host are refused and logged
// (RefusedConnMsg).
func Serve(tool Tool) { ServeWithConfig(tool, ServeConfig{}) }

// ServeWithConfig is Serve with options.
func ServeWithConfig(tool Tool, cfg ServeConfig) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{
			Level:      hclog.Trace,
			Output:     os.Stderr,
			JSONFormat: true,
		})
	}
	if cfg.ParentWatchInterval == 0 {
		cfg.ParentWatchInterval = 200 * time.Millisecond
	}
	if len(os.Args) == 2 && os.Args[1] == "--document" {
		os.Exit(printDocument(tool, os.Stdout, os.Stderr))
	}
	srv := &server{tool: tool}
	srv3 := &server{tool: tool, v3: true}
	var tlsConfig *tls.Config // nil only when not started by a host
	if os.Getenv(wire.Handshake.MagicCookieKey) == wire.Handshake.MagicCookieValue {
		// Started by a host: serve only over TLS with the host's
		// certificate (no downgrade to plaintext), and log every
		// connection that is not the host's.
		var err error
		if tlsConfig, err = serverTLS(); err != nil {
			cfg.Logger.Error(err.Error())
			os.Exit(1)
		}
		logRefusedConns(cfg.Logger)
		// Die with the host, and take our children along.
		guardChildren(cfg.Logger)
		if cfg.ParentWatchInterval > 0 {
			go watchParent(os.Getppid(), cfg.ParentWatchInterval, cfg.Logger)
		}
		// Calls come over the data channel when the host gave one; the
		// hello must be written before plugin.Serve prints the handshake.
		if hostSpeaks(wire.ProtocolV3) {
			serveChannel(srv3, cfg.Logger)
		} else {
			serveChannel(srv, cfg.Logger)
		}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		// go-plugin settles on the highest version both sides speak: 3
		// with a host of this module, 2 with an older one.
		VersionedPlugins: wire.VersionedPluginSets(srv, srv3),
		Logger:           cfg.Logger,
		// Our P-256 certificate instead of go-plugin's P-521 one: nil
		// when run by hand, where Serve prints its notice and exits.
		TLSProvider: tlsProvider(tlsConfig),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, wire.ServerOptions()...))
		},
	})
}

// tlsProvider is c as a plugin.ServeConfig.TLSProvider: nil for nil.
func tlsProvider(c *tls.Config) func() (*tls.Config, error) {
	if c == nil {
		return nil
	}
	return func() (*tls.Config, error) { return c, nil }
}

// printDocument writes tool's OpenTool document to out as indented JSON,
// as the Python and Node SDKs do for --document (for `opentool-host
// validate -` and a look at what a plugin declares), and returns the exit
// status: 0, or 1 when Load fails (the error on errOut).
func printDocument(tool Tool, out, errOut io.Writer) int {
	doc, err := tool.Load(context.Background())
	if err == nil {
		var b []byte
		if b, err = json.MarshalIndent(doc, "", "  "); err == nil {
			_, err = fmt.Fprintln(out, string(b))
		}
	}
	if err != nil {
		fmt.Fprintln(errOut, "document:", err)
		return 1
	}
	return 0
}

// watchParent exits the process when its parent changes (the host died and
// the plugin was re-parented), checking every interval.
func watchParent(ppid int, interval time.Duration, _ hclog.Logger) {
	if ppid <= 1 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			// The host is gone: stderr is likely a broken pipe, so exit
			// without logging (a write could end us by SIGPIPE first).
			exitWithGroup()
		}
	}
}

// PluginSet returns the go-plugin plugin set that serves tool, for a
// plugin that calls plugin.Serve itself or a test that uses go-plugin's
// plugin.TestPluginGRPCConn. Serve uses it.
func PluginSet(tool Tool) plugin.PluginSet { return wire.PluginSet(&server{tool: tool}) }

// hostSpeaks reports whether the host offers app protocol version v
// (go-plugin's PLUGIN_PROTOCOL_VERSIONS), which go-plugin then picks
// when it is the highest this SDK speaks.
func hostSpeaks(v int) bool {
	for _, f := range strings.Split(os.Getenv("PLUGIN_PROTOCOL_VERSIONS"), ",") {
		if strings.TrimSpace(f) == strconv.Itoa(v) {
			return true
		}
	}
	return false
}

// serveChannel serves srv's calls over the host's data channel
// (wire.OpenPluginChannel), when there is one, in the background. A
// channel that cannot be opened is logged; calls then come over gRPC.
func serveChannel(srv *server, log hclog.Logger) {
	conn, err := wire.OpenPluginChannel()
	if err != nil {
		log.Warn("data channel unavailable; calls come over gRPC", "error", err)
		return
	}
	if conn == nil {
		return
	}
	go func() {
		if err := wire.ServeChannel(conn, srv.v3, srv.callFrame); err != nil && !errors.Is(err, io.EOF) {
			log.Error("data channel ended", "error", err)
		}
	}()
}
