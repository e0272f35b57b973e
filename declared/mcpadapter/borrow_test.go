package mcpadapter

import (
	"context"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit/base"
)

// TestLending: spoil turns lending off at once (no loan after it) and
// returns only when every loan in flight ended, so that no lent call
// sees the write that follows, or with ctx's error; a second spoil, or
// end, finds lending off already; renew turns it on again, but not
// while a loan is in flight, and not when it is on.
func TestLending(t *testing.T) {
	var l lending
	a, ok := l.lend()
	b, ok2 := l.lend()
	if !ok || !ok2 {
		t.Fatal("lend refused while lending is on")
	}
	spoiled := make(chan error, 1)
	go func() {
		_, err := l.spoil(context.Background())
		spoiled <- err
	}()
	if _, err := base.Poll(5*time.Second, time.Millisecond, l.isOff); err != nil {
		t.Fatal("spoil did not turn lending off:", err)
	}
	if _, ok := l.lend(); ok {
		t.Fatal("lend granted after spoil")
	}
	a.release()
	select {
	case err := <-spoiled:
		t.Fatalf("spoil returned (%v) with a loan in flight", err)
	default:
	}
	b.release()
	select {
	case err := <-spoiled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("spoil still waits once every loan ended")
	}
	if first, err := l.spoil(context.Background()); first || err != nil {
		t.Fatalf("second spoil = %v, %v; want not first, no wait", first, err)
	}
	if l.end() {
		t.Fatal("end turned off lending that spoil had turned off")
	}
	if !l.renew() || l.isOff() {
		t.Fatal("renew left lending off with no loan in flight")
	}
	if l.renew() {
		t.Fatal("renew reported lending off while it was on")
	}
	if _, ok := l.lend(); !ok {
		t.Fatal("lend refused once renewed")
	}

	var m lending
	c, _ := m.lend()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if first, err := m.spoil(ctx); !first || err == nil {
		t.Fatalf("spoil with an ended ctx and a loan in flight = %v, %v; want first, ctx's error", first, err)
	}
	if m.renew() || !m.isOff() {
		t.Fatal("renew turned lending on with a loan in flight")
	}
	c.release()
}
