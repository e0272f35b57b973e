package testkit

import (
	"context"
	"errors"
	"sync"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// StatesBackend is an opentoolapi.Backend whose plugins are in the states
// given to Set (named a, b, c, ...); it serves no function.
type StatesBackend struct {
	mu     sync.Mutex
	states []core.State
}

// Set sets the plugins' states.
func (b *StatesBackend) Set(states ...core.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.states = states
}

// Call fails: there are no functions.
func (b *StatesBackend) Call(context.Context, string, []byte) ([]byte, error) {
	return nil, errors.New("no functions")
}

// StreamCall fails: there are no functions.
func (b *StatesBackend) StreamCall(context.Context, *core.Exchange, string, []byte, func([]byte) error) error {
	return errors.New("no functions")
}

// Document is an empty document.
func (b *StatesBackend) Document(title, version, _ string) *opentool.OpenTool {
	return &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: title, Version: version}}
}

// Functions lists none.
func (b *StatesBackend) Functions() []host.FunctionInfo { return nil }

// ToolSearchThreshold is 0: no tool search.
func (b *StatesBackend) ToolSearchThreshold() int { return 0 }

// Plugins lists the plugins in their states.
func (b *StatesBackend) Plugins() []supervise.PluginStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]supervise.PluginStatus, len(b.states))
	for i, st := range b.states {
		out[i] = supervise.PluginStatus{Name: string(rune('a' + i)), State: st, Functions: []string{}}
	}
	return out
}
