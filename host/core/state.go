package core

// State is a plugin's lifecycle state (the diagram is on next, in
// lifecycle.go).
type State string

// The plugin lifecycle states.
const (
	// StateStarting: a process is being started and loaded, and none
	// serves (the first start, or a retry of a failed plugin).
	StateStarting State = "starting"
	// StateReady: a process serves the plugin's functions (a replacement
	// may be starting beside it).
	StateReady State = "ready"
	// StateRestarting: the process died and is being restarted; calls
	// wait for it up to their deadline.
	StateRestarting State = "restarting"
	// StateDraining: the plugin was removed or the host is closing;
	// in-flight calls finish.
	StateDraining State = "draining"
	// StateStopped: the plugin is gone.
	StateStopped State = "stopped"
	// StateFailed: the plugin could not be started or kept crashing; its
	// functions are not served until its file changes or a rescan.
	StateFailed State = "failed"
	// StateDegraded: as StateReady (a process serves the plugin's
	// functions), but the plugin refused part of what it declares (an
	// MCP server's tool whose input schema is not an object, say);
	// PluginStatus.Refused says what and why. Only PluginStatus reports
	// it: in the lifecycle the plugin is ready.
	StateDegraded State = "degraded"
)

// Serving reports whether a plugin in state s serves its functions:
// ready or degraded.
func (s State) Serving() bool { return s == StateReady || s == StateDegraded }

// Settled reports whether a plugin in state s lets the host be ready:
// ready or degraded (serving); failed (the host gave up: the first start or a retry failed, or
// Restart.MaxFailures crashes or failed restarts in a row, and nothing
// retries it until its file changes, a rescan or the lock changes, so
// waiting for it would hold readiness forever); or draining or stopped
// (removed, going away). Starting and restarting (a crash being retried
// after a backoff, at most Restart.MaxFailures times) are not settled.
func (s State) Settled() bool {
	switch s {
	case StateReady, StateDegraded, StateFailed, StateDraining, StateStopped:
		return true
	}
	return false
}
