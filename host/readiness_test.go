package host_test

import (
	"testing"

	"github.com/opentool-host/opentool-host/host"
)

// TestSettled: which states let the host be ready.
func TestSettled(t *testing.T) {
	for st, want := range map[host.State]bool{
		host.StateReady: true, host.StateDegraded: true, host.StateFailed: true, host.StateDraining: true, host.StateStopped: true,
		host.StateStarting: false, host.StateRestarting: false,
	} {
		if got := st.Settled(); got != want {
			t.Errorf("Settled(%s) = %v, want %v", st, got, want)
		}
	}
}
