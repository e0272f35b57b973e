// Package wire is the host/plugin protocol of opentool-host, shared by
// the host (package host) and the plugin SDK (package pluginsdk), after
// hashicorp/go-plugin's examples/grpc/shared: the go-plugin handshake, the
// gRPC service toolpb.Tool (Load and Invoke, JSON bytes), the pooled
// codec, and the host side of a connection (Client).
//
// One call on the wire is one Invoke stream: the host sends the call,
// the plugin answers with data events (one for a unary function, one per
// item for a streaming one) or an error event, and ends the stream. A
// cancel the host sends later travels on the same stream, so it can never
// arrive before the call it cancels.
//
// Plugin authors do not import this package; they use pluginsdk.
package wire

import plugin "github.com/hashicorp/go-plugin"

// PluginName is the name the host dispenses from a plugin's plugin set.
const PluginName = "tool"

// ProtocolVersion is the go-plugin app protocol version of the
// host/plugin protocol that every host and plugin speaks: 2 is the Invoke
// stream of toolpb v2 (1 had separate Call, StreamCall and Cancel RPCs).
// A plugin built against another version fails the handshake with a
// clear error.
const ProtocolVersion = 2

// ProtocolV3 is version 2 plus what MCP carries beyond a result object
// (message.go; tool.proto's members marked "protocol 3"; the data
// channel's reply, MCP result and message frames). The host offers 2 and
// 3 (PLUGIN_PROTOCOL_VERSIONS=2,3) and go-plugin settles on the highest
// both speak: the Go SDK speaks 3, the Python and Node SDKs 2.
const ProtocolV3 = 3

// Versions are the app protocol versions this module speaks, oldest
// first.
var Versions = []int{ProtocolVersion, ProtocolV3}

// MaxMessageSize is the largest gRPC message, in bytes, a plugin accepts
// and sends (64 MiB; gRPC's default receive limit is 4 MiB). The host
// receives at most its configured result cap (core.Config.MaxResultBytes).
const MaxMessageSize = 64 << 20

// Handshake is the go-plugin handshake shared by host and plugins. The
// magic cookie only keeps people from running a plugin binary by hand; it
// is not a security measure.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "OPENTOOL_PLUGIN",
	MagicCookieValue: "4c6d2b0a-opentool-host-plugin",
}
