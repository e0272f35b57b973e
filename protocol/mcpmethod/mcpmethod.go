// Package mcpmethod is the one table of MCP methods the host serves,
// relays or sends: for each, its direction, its params and result types
// (the MCP Go SDK's), the capability or extension it needs, how the host
// routes it and the revisions that have it. Every switch on an MCP
// method's name in the host reads its name and properties here; adding a
// method is one row (methods.go) and its handler. A leaf: it imports the
// SDK and nothing of the project.
package mcpmethod

import (
	"reflect"
	"slices"
)

// Direction is who sends a method and whether it is answered.
type Direction uint8

// The directions of MCP's messages (MCP 2025-11-25, "Base Protocol",
// Messages).
const (
	// ToServer is a request a client sends and a server answers.
	ToServer Direction = iota + 1
	// ToClient is a request a server sends and a client answers
	// ("Client Features": sampling, elicitation, roots).
	ToClient
	// NoteToServer is a notification a client sends.
	NoteToServer
	// NoteToClient is a notification a server sends.
	NoteToClient
	// NoteEither is a notification either side sends (progress,
	// cancellation).
	NoteEither
)

// String returns the direction's name as the table's docs write it.
func (d Direction) String() string {
	switch d {
	case ToServer:
		return "client→server"
	case ToClient:
		return "server→client"
	case NoteToServer:
		return "notification client→server"
	case NoteToClient:
		return "notification server→client"
	case NoteEither:
		return "notification either way"
	}
	return "unknown"
}

// Notification reports whether d is a notification's (never answered).
func (d Direction) Notification() bool { return d >= NoteToServer }

// Route is how the host routes a method it receives or relays.
type Route uint8

// The host's routes.
const (
	// Host: answered by the host itself, from what it holds (the
	// session, the merged lists, the task store).
	Host Route = iota + 1
	// Plugin: routed to the plugin that serves the tool, resource or
	// prompt the params name (Method.Key), a declared MCP server's
	// session among them (host/catalog.go, declared/mcpadapter).
	Plugin
	// Caller: a server's request (or notification) about a call in
	// flight, passed on to the MCP client session that made the call
	// (declared/mcpadapter/relay.go, frontend/mcpapi/exchange.go); in
	// 2026-07-28, which has no session, a request goes as an
	// input_required round of the call instead.
	Caller
	// Lists: a server's notification of a change, passed on to the
	// sessions that may see it (frontend/mcpapi/listviews.go,
	// frontend/mcpapi/subscriptions).
	Lists
	// NotRelayed: a method the SDK knows that the host neither serves
	// nor passes on; the SDK's own handling is all it gets.
	NotRelayed
)

// String returns the route's name.
func (r Route) String() string {
	switch r {
	case Host:
		return "host"
	case Plugin:
		return "plugin"
	case Caller:
		return "caller"
	case Lists:
		return "lists"
	case NotRelayed:
		return "not relayed"
	}
	return "unknown"
}

// Revisions is a set of MCP revisions, one bit each.
type Revisions uint8

// The MCP revisions the host speaks, oldest first, and sets of them.
const (
	R20241105 Revisions = 1 << iota
	R20250326
	R20250618
	R20251125
	R20260728

	// FromR20241105 is every revision.
	FromR20241105 = R20241105 | R20250326 | R20250618 | R20251125 | R20260728
	// FromR20250618 is 2025-06-18 and later.
	FromR20250618 = R20250618 | R20251125 | R20260728
	// FromR20251125 is 2025-11-25 and later.
	FromR20251125 = R20251125 | R20260728
	// ToR20251125 is every revision before 2026-07-28: those with
	// sessions and initialize.
	ToR20251125 = R20241105 | R20250326 | R20250618 | R20251125
)

// revisionNames are the revisions' dates, in the order of their bits.
var revisionNames = [...]string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// AllRevisions returns the revisions' dates, oldest first.
func AllRevisions() []string { return slices.Clone(revisionNames[:]) }

// RevisionOf returns the bit of the revision dated v ("2025-06-18"), 0
// for a date that is not one of AllRevisions.
func RevisionOf(v string) Revisions {
	for i, n := range revisionNames {
		if n == v {
			return 1 << i
		}
	}
	return 0
}

// Has reports whether the revision dated v is in rs.
func (rs Revisions) Has(v string) bool {
	b := RevisionOf(v)
	return b != 0 && rs&b != 0
}

// Names returns the dates of the revisions in rs, oldest first.
func (rs Revisions) Names() []string {
	var out []string
	for i, n := range revisionNames {
		if rs&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Key is the member of a request's params that names what it is routed
// by (Route Plugin), as the MCP spec names it.
type Key uint8

// The routing keys.
const (
	// NoKey: not routed by its params.
	NoKey Key = iota
	// ByName: params.name (a tool, a prompt).
	ByName
	// ByURI: params.uri (a resource).
	ByURI
	// ByRef: params.ref, a prompt's name or a template's URI
	// (completion/complete).
	ByRef
)

// Method is one row of the table.
type Method struct {
	// Name is the method's JSON-RPC name ("tools/call").
	Name string
	// Dir is who sends it and whether it is answered.
	Dir Direction
	// Params is the SDK's type of its params (a pointer type), nil when
	// the SDK has none (the tasks' vocabulary is host/tasks/mcptasks').
	Params reflect.Type
	// Result is the SDK's type of its result (a pointer type), nil for a
	// notification and when the SDK has none.
	Result reflect.Type
	// Needs is the capability the receiver declares for it, as a path
	// into capabilities ("tools", "resources.subscribe", "sampling"), or
	// the extension's identifier; "" when none is needed.
	Needs string
	// Route is how the host routes it.
	Route Route
	// Key is the params member a Plugin route goes by.
	Key Key
	// Revisions are the revisions that have it.
	Revisions Revisions
}

// In reports whether the revision dated v has m.
func (m Method) In(v string) bool { return m.Revisions.Has(v) }

// NewResult returns a new zero value of m's result type (a pointer to
// the SDK's struct), nil when m has none.
func (m Method) NewResult() any {
	if m.Result == nil || m.Result.Kind() != reflect.Pointer {
		return nil
	}
	return reflect.New(m.Result.Elem()).Interface()
}

// byName indexes the table by name.
var byName = func() map[string]Method {
	m := make(map[string]Method, len(table))
	for _, r := range table {
		if _, dup := m[r.Name]; dup {
			panic("mcpmethod: " + r.Name + " twice in the table")
		}
		m[r.Name] = r
	}
	return m
}()

// Lookup returns the row of the method named name; false for a name not
// in the table.
func Lookup(name string) (Method, bool) {
	m, ok := byName[name]
	return m, ok
}

// Name returns the table's name of the method named b (its bytes: a
// JSON string's content), without allocating; false for a name not in
// the table.
func Name(b []byte) (string, bool) {
	m, ok := byName[string(b)]
	return m.Name, ok
}

// All returns the table's rows in its order.
func All() []Method { return slices.Clone(table) }

// RoutedTo reports whether the method named name is in the table with
// route r.
func RoutedTo(name string, r Route) bool {
	m, ok := byName[name]
	return ok && m.Route == r
}

// IsClientRequest reports whether name is a request a server sends its
// client (Dir ToClient) that the host passes on to the caller.
func IsClientRequest(name string) bool {
	m, ok := byName[name]
	return ok && m.Dir == ToClient && m.Route == Caller
}

// Capability returns the capability the method named name needs, "" for
// one that needs none or a name not in the table.
func Capability(name string) string { return byName[name].Needs }
