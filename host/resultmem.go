package host

import (
	"context"
	"fmt"
	"sync"

	"github.com/opentool-host/opentool-host/host/core"
)

// A result is held in the host's memory from when it arrives until the
// front end has written it to a client that may read slowly (up to
// --write-timeout per write). resultBudget bounds the bytes of results so
// held across every connection (Config.MaxResultMemory): a call whose
// result would take more fails as busy and its result is dropped at once.
// Results are charged to the scope of the request that asked for them
// (WithResultScope), and released together when the request is done.
type resultBudget struct {
	mu   sync.Mutex
	max  int64
	used int64
}

// take charges n bytes, or reports false when that would exceed max.
func (b *resultBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// give returns n bytes, and has the process give freed memory back to
// the OS soon when a large amount was returned (memTrim).
func (b *resultBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	core.MemTrim.Note(int(min(n, 1<<30)))
}

// ResultMemory returns the bytes of results the host holds now for requests that
// are not done (Config.MaxResultMemory bounds it).
func (h *Host) ResultMemory() int64 {
	h.results.mu.Lock()
	defer h.results.mu.Unlock()
	return h.results.used
}

// resultScope is the results one request holds.
type resultScope struct {
	mu     sync.Mutex
	budget *resultBudget
	held   int64
	done   bool
}

type resultScopeKey struct{}

// WithResultScope returns ctx carrying a scope that Host.Call charges each
// result to (against Config.MaxResultMemory), and the function that
// releases them all: call it when the response has been written (the
// front door does, per request). Calls on a context without a scope are
// not bounded by MaxResultMemory (in-process callers, the CLI).
func (h *Host) WithResultScope(ctx context.Context) (context.Context, func()) {
	s := &resultScope{budget: &h.results}
	return context.WithValue(ctx, resultScopeKey{}, s), s.release
}

// charge takes n bytes for the scope of ctx; false when the budget is
// full. Without a scope it always succeeds.
func charge(ctx context.Context, n int) bool {
	s, _ := ctx.Value(resultScopeKey{}).(*resultScope)
	if s == nil || n == 0 {
		return true
	}
	if !s.budget.take(int64(n)) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done { // released already: give it straight back
		s.budget.give(int64(n))
		return true
	}
	s.held += int64(n)
	return true
}

// release gives back everything the scope holds; later charges pass
// through.
func (s *resultScope) release() {
	s.mu.Lock()
	n := s.held
	s.held, s.done = 0, true
	s.mu.Unlock()
	if n > 0 {
		s.budget.give(n)
	}
}

// errResultMemory is the error of a call whose result does not fit in
// Config.MaxResultMemory.
func (h *Host) errResultMemory(fn string, n int) *core.Error {
	return &core.Error{Kind: core.KindBusy, Function: fn, Message: fmt.Sprintf(
		"busy: the host already holds %d MiB of results for clients that have not read them (--max-result-memory %d MiB); this %d-byte result was dropped: try again later",
		h.ResultMemory()>>20, h.results.max>>20, n)}
}
