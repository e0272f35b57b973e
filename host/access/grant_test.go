package access

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestGrantMemo: Memo makes its value once per grant and gives every
// caller, concurrent ones included, the one value kept; another grant
// has its own; a nil grant gets build's value, not kept.
func TestGrantMemo(t *testing.T) {
	g, other := NewGrant("k", []string{"*"}), NewGrant("o", []string{"*"})
	var made atomic.Int32
	build := func(g *Grant) any { made.Add(1); return &struct{ name string }{g.Name()} }
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = g.Memo(build) }()
	}
	wg.Wait()
	for _, v := range got {
		if v != got[0] {
			t.Fatalf("concurrent Memo gave %p and %p: want one value", v, got[0])
		}
	}
	before := made.Load()
	if v := g.Memo(build); v != got[0] || made.Load() != before {
		t.Errorf("a later Memo made a value again or gave another")
	}
	if v := other.Memo(build); v == got[0] || v.(*struct{ name string }).name != "o" {
		t.Errorf("another grant's Memo = %v, want its own", v)
	}
	var none *Grant
	if a, b := none.Memo(build), none.Memo(build); a == b {
		t.Error("a nil grant's Memo kept its value")
	}
}
