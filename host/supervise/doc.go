// Package supervise holds the process side of a plugin's supervision:
// the go-plugin runner over a launcher process (ProcessRunner: its start,
// wait, kill and exit status, the handshake line cut from stdout), a
// plugin's stderr as log lines and its last lines (LineLogger,
// TailBuffer), the hint of a failed start (StartHint, UserPaths) and the
// per-start TLS of the host's authentication (PluginTLS). It imports no
// package under host/; package host (the Plugin, its lifecycle and
// instances, for now) imports it.
package supervise
