// Package core holds what the host's layers share and the front ends
// see through package host: the one call error (Error with its Kind),
// the host's settings (Config, RestartPolicy), a plugin's lifecycle
// State, the lifecycle events (Event, EventHub), who made a call
// (Caller, CallRecord), the quiet logger, the process's memory trimmer
// and the plugin environment's allow-list. It imports no package under
// host/; package host re-exports each name (aliases.go),
// so front ends keep writing host.Error, host.Config, host.StateReady.
package core
