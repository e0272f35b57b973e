// Package supervise is a plugin's supervision: the Plugin (one plugin
// file, its lifecycle as the pure transition function next, its
// processes and their starts, a declared plugin served in the host's
// process instead, one call on a process and its cancel guard), what it
// offers the host's routing table (Offer) and reports (PluginStatus),
// and the process side beneath it: the go-plugin runner over a launcher
// process (ProcessRunner), a plugin's stderr as log lines and its last
// lines (LineLogger, TailBuffer), the hint of a failed start (StartHint,
// UserPaths) and the per-start TLS of the host's authentication
// (PluginTLS).
//
// A Plugin gets a Supervisor from its host, never the host itself; a
// call reaches it as a Request the host's call path implements (routing,
// argument checks and the observation of calls stay in package host).
// It imports host/core and host/discover, no other package under host/;
// package host imports it.
package supervise
