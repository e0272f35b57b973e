package supervise

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/process/launcher"

	"github.com/opentool-host/opentool-host/internal/wire"
)

// The data channel of one plugin process (internal/wire, frame.go): the
// host offers it at start as an inherited descriptor, and once the
// handshake is read it takes the plugin's calls when the plugin said
// hello on it. It is only a transport: instance.send drives a call the
// same way over it or over gRPC.

// channelFD is the descriptor number of the plugin's end: the first of
// launcher.Spec.ExtraFiles.
const channelFD = 3

// offerChannel makes a connected pair of unix stream sockets, gives the
// plugin one end as descriptor channelFD (wire.DataFDEnv in its
// environment) and keeps the other in i.chanEnd. The plugin's end is
// closed in the host once the process started (launcher.Cmd.Start).
func (i *instance) offerChannel(spec *launcher.Spec) error {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("data channel: %w", err)
	}
	hostEnd := os.NewFile(uintptr(fds[0]), "opentool-data-host")
	conn, err := net.FileConn(hostEnd)
	_ = hostEnd.Close()
	if err != nil {
		_ = syscall.Close(fds[1])
		return fmt.Errorf("data channel: %w", err)
	}
	i.chanEnd = conn
	spec.ExtraFiles = append(spec.ExtraFiles, os.NewFile(uintptr(fds[1]), "opentool-data-plugin"))
	spec.Env = append(spec.Env, fmt.Sprintf("%s=%d", wire.DataFDEnv, channelFD+len(spec.ExtraFiles)-1))
	return nil
}

// acceptChannel, after the handshake, moves calls to the data channel
// when the plugin said hello on it; otherwise its end is closed and calls
// stay on gRPC. A plugin that later breaks the channel's protocol is
// killed (and restarted), its crash report saying why. Errors: bytes
// other than the hello on the channel.
func (i *instance) acceptChannel(cfg *core.Config) error {
	conn := i.chanEnd
	if conn == nil {
		return nil
	}
	ch, err := wire.AcceptChannel(conn, cfg.MaxResultBytes, i.violated)
	if err != nil {
		return fmt.Errorf("data channel: %w", err)
	}
	if ch == nil {
		i.closeChannel()
		return nil
	}
	if i.tool.V3() {
		ch.SetV3()
	}
	i.tool.UseChannel(ch)
	i.log.Debug("calls go over the data channel", "plugin", i.name)
	return nil
}

// violated kills the process of a plugin that broke the data channel's
// protocol: it can no longer be trusted to answer the right call.
func (i *instance) violated(err error) {
	reason := err.Error()
	i.killReason.Store(&reason)
	i.log.Error("plugin broke the data channel protocol; killing it", "plugin", i.name, "error", err)
	i.kill()
}

// closeChannel closes the data channel, or the unaccepted end of it.
func (i *instance) closeChannel() {
	if i.tool != nil {
		if ch := i.tool.Channel(); ch != nil {
			_ = ch.Close()
			return
		}
	}
	if i.chanEnd != nil {
		_ = i.chanEnd.Close()
	}
}

// Transports of PluginStatus.Transport.
const (
	transportChannel = "data-channel"
	transportGRPC    = "grpc"
	// transportInProcess: a declared plugin, served in the host's process.
	transportInProcess = "in-process"
)

// transport names how calls reach the process.
func (i *instance) transport() string {
	if i.local != nil {
		return transportInProcess
	}
	if i.tool != nil && i.tool.Channel() != nil {
		return transportChannel
	}
	return transportGRPC
}
