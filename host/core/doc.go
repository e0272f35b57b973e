// Package core holds what the host's layers share and the front ends
// import: the one call error (Error with its Kind),
// the host's settings (Config, RestartPolicy), a plugin's lifecycle
// State, the lifecycle events (Event, EventHub), who made a call
// (Caller, CallRecord), the quiet logger, the process's memory trimmer
// and the plugin environment's allow-list. It imports no package under
// host/; every package, host's own files included, names these as
// core.Error, core.Config, core.StateReady.
package core
