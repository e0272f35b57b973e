package tasklayer

import "testing"

// TestCoreRelayBounds: the statuses relayed for one core task are at
// most relayBurst at once (then relayRate a second), and a message that
// repeats the last relayed is not relayed again.
func TestCoreRelayBounds(t *testing.T) {
	r := newCoreRelay("k")
	if !r.fresh("one") || r.fresh("one") {
		t.Fatal("a repeated message was relayed twice, or the first not at all")
	}
	n := 1
	for i := range 3 * relayBurst {
		if r.fresh(string(rune('a' + i))) {
			n++
		}
	}
	// relayRate a second may refill a token or two while the loop runs.
	if n < relayBurst || n > relayBurst+2 {
		t.Fatalf("%d of %d distinct statuses relayed at once, want about %d", n, 3*relayBurst+1, relayBurst)
	}
}
