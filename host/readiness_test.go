package host_test

import (
	"testing"

	"github.com/opentool-host/opentool-host/host/core"
)

// TestSettled: which states let the host be ready.
func TestSettled(t *testing.T) {
	for st, want := range map[core.State]bool{
		core.StateReady: true, core.StateDegraded: true, core.StateFailed: true, core.StateDraining: true, core.StateStopped: true,
		core.StateStarting: false, core.StateRestarting: false,
	} {
		if got := st.Settled(); got != want {
			t.Errorf("Settled(%s) = %v, want %v", st, got, want)
		}
	}
}
