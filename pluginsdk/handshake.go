package pluginsdk

import plugin "github.com/hashicorp/go-plugin"

// PluginName is the name the host dispenses from a plugin's plugin set.
const PluginName = "tool"

// ProtocolVersion is the version of the host/plugin protocol. A plugin
// built against another version fails the handshake with a clear error.
const ProtocolVersion = 1

// MaxMessageSize is the largest gRPC message, in bytes, either side accepts
// (64 MiB; gRPC's default receive limit is 4 MiB).
const MaxMessageSize = 64 << 20

// Handshake is the go-plugin handshake shared by host and plugins. The
// magic cookie only keeps people from running a plugin binary by hand; it
// is not a security measure.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "OPENTOOL_PLUGIN",
	MagicCookieValue: "4c6d2b0a-opentool-host-plugin",
}
