package host

import (
	"context"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// The names of package core that are the host's API: aliases, so that
// front ends and the CLI keep writing host.Error, host.Config and
// host.StateReady. Each is documented where it is defined, in core.

// Error is core.Error: the one error of Call and StreamCall, with a Kind.
type Error = core.Error

// Kind is core.Kind: what went wrong with a call.
type Kind = core.Kind

// Fault is core.Fault: one problem with a call's arguments.
type Fault = core.Fault

// Config is core.Config: a Host's settings.
type Config = core.Config

// RestartPolicy is core.RestartPolicy: the restart backoff.
type RestartPolicy = core.RestartPolicy

// State is core.State: a plugin's lifecycle state.
type State = core.State

// Event is core.Event: one lifecycle event of a plugin.
type Event = core.Event

// Caller is core.Caller: who made a call.
type Caller = core.Caller

// CallRecord is core.CallRecord: one finished call, for Config.OnCall.
type CallRecord = core.CallRecord

// The kinds of call errors (core's Kind constants).
const (
	KindInvalidParams  = core.KindInvalidParams
	KindNotFound       = core.KindNotFound
	KindWrongKind      = core.KindWrongKind
	KindTool           = core.KindTool
	KindExited         = core.KindExited
	KindFailed         = core.KindFailed
	KindStopped        = core.KindStopped
	KindTransport      = core.KindTransport
	KindTimeout        = core.KindTimeout
	KindBusy           = core.KindBusy
	KindCanceled       = core.KindCanceled
	KindResultRejected = core.KindResultRejected
	KindNeedsLogin     = core.KindNeedsLogin
)

// Sentinels for errors.Is, one per kind, and ErrClosed (core's).
var (
	ErrFunctionNotFound = core.ErrFunctionNotFound
	ErrWrongKind        = core.ErrWrongKind
	ErrPluginExited     = core.ErrPluginExited
	ErrPluginFailed     = core.ErrPluginFailed
	ErrPluginStopped    = core.ErrPluginStopped
	ErrTimeout          = core.ErrTimeout
	ErrBusy             = core.ErrBusy
	ErrCanceled         = core.ErrCanceled
	ErrResultRejected   = core.ErrResultRejected
	ErrInvalidParams    = core.ErrInvalidParams
	ErrClosed           = core.ErrClosed
)

// The plugin lifecycle states (core's State constants).
const (
	StateStarting   = core.StateStarting
	StateReady      = core.StateReady
	StateRestarting = core.StateRestarting
	StateDraining   = core.StateDraining
	StateStopped    = core.StateStopped
	StateFailed     = core.StateFailed
	StateDegraded   = core.StateDegraded
)

// Lifecycle event types (core's Event constants).
const (
	EventFound      = core.EventFound
	EventReady      = core.EventReady
	EventReplaced   = core.EventReplaced
	EventRejected   = core.EventRejected
	EventRestarting = core.EventRestarting
	EventFailed     = core.EventFailed
	EventHeld       = core.EventHeld
	EventChanged    = core.EventChanged
	EventRemoved    = core.EventRemoved
	EventCollision  = core.EventCollision
)

// Defaults and the transport variable (core's).
const (
	DefaultMaxResultMemory = core.DefaultMaxResultMemory
	DefaultMaxResultBytes  = core.DefaultMaxResultBytes
	TransportEnv           = core.TransportEnv
)

// AsError returns the *Error in err's chain, or nil (core.AsError).
func AsError(err error) *Error { return core.AsError(err) }

// WithCaller returns ctx carrying c (core.WithCaller).
func WithCaller(ctx context.Context, c Caller) context.Context { return core.WithCaller(ctx, c) }

// CallerFrom returns the Caller on ctx, zero when none (core.CallerFrom).
func CallerFrom(ctx context.Context) Caller { return core.CallerFrom(ctx) }

// Plugin supervises one plugin file (supervise.Plugin).
type Plugin = supervise.Plugin

// offer is what a plugin offers the routing table (supervise.Offer).
type offer = supervise.Offer

// PluginStatus is the state of one plugin as GET /health reports it
// (supervise.PluginStatus).
type PluginStatus = supervise.PluginStatus

// Conflict is a function a plugin declares under a name another plugin
// owns (supervise.Conflict).
type Conflict = supervise.Conflict

// The readiness statuses of a host (GET /health?ready=1 answers
// {"status":STATUS}; supervise.ReadinessReady, ...).
const (
	ReadinessReady    = supervise.ReadinessReady
	ReadinessStarting = supervise.ReadinessStarting
	ReadinessDraining = supervise.ReadinessDraining
)

// PluginFileEnv is the variable that gives every plugin process the
// absolute path of its file in the plugins folder
// (supervise.PluginFileEnv).
const PluginFileEnv = supervise.PluginFileEnv

// Readiness is ReadinessStarting while a plugin of ps is not Settled,
// else ReadinessReady (supervise.Readiness).
func Readiness(ps []PluginStatus) string { return supervise.Readiness(ps) }
