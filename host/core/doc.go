// Package core holds what the host's layers share and the front ends
// import: the one call error (Error with its Kind),
// the host's settings (Config, RestartPolicy), a plugin's lifecycle
// State, the lifecycle events (Event, EventHub), who made a call
// (Caller, CallRecord), the quiet logger, the process's memory trimmer
// and the plugin environment's allow-list. It imports no package under
// host/. Package host still re-exports each name (aliases.go) for its
// own files, frontend/mcpapi and declared/mcpadapter, until they name
// core.Error, core.Config, core.StateReady as every other package does.
package core
