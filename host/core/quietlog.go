package core

import "github.com/hashicorp/go-hclog"

// debugOnly are lines that repeat, without the plugin's name or with
// less, what the one ERROR line of a failed start or a crash
// (lifecycle.go) says: go-plugin's report of the process's exit and of
// its kill, and the stderr tail of a failed start (which that line
// carries). The host logs them at debug level.
var debugOnly = map[string]bool{
	"plugin process exited":                   true, // go-plugin: "signal: killed", "exit status 1"
	"plugin failed to exit gracefully":        true, // go-plugin's Kill, after every failed start
	"plugin output before it failed to start": true, // instance.go: in the failed start's line
}

// quietLogger is the host's logger with the lines of debugOnly at debug
// level, whatever level they were logged at; every logger derived from
// it (Named, With) does the same.
type quietLogger struct{ hclog.Logger }

// Quiet wraps l (once).
func Quiet(l hclog.Logger) hclog.Logger {
	if _, ok := l.(quietLogger); ok {
		return l
	}
	return quietLogger{l}
}

// Log logs msg at level, or at debug level for the lines of debugOnly.
func (l quietLogger) Log(level hclog.Level, msg string, args ...any) {
	if debugOnly[msg] && level > hclog.Debug {
		level = hclog.Debug
	}
	l.Logger.Log(level, msg, args...)
}

// Info logs msg as Log does at info level.
func (l quietLogger) Info(msg string, args ...any) { l.Log(hclog.Info, msg, args...) }

// Warn logs msg as Log does at warn level.
func (l quietLogger) Warn(msg string, args ...any) { l.Log(hclog.Warn, msg, args...) }

// Error logs msg as Log does at error level.
func (l quietLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// With returns the logger with args, quiet too.
func (l quietLogger) With(args ...any) hclog.Logger { return quietLogger{l.Logger.With(args...)} }

// Named returns the sub-logger name, quiet too.
func (l quietLogger) Named(name string) hclog.Logger { return quietLogger{l.Logger.Named(name)} }

// ResetNamed returns the logger named name, quiet too.
func (l quietLogger) ResetNamed(name string) hclog.Logger {
	return quietLogger{l.Logger.ResetNamed(name)}
}
