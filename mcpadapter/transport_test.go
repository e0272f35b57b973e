package mcpadapter

import (
	"slices"
	"testing"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// TestServerEnv: a server gets the launcher's allow-list of the adapter's
// environment (base names and what the host granted), never the
// host-to-adapter variables, then the declared values, which win.
func TestServerEnv(t *testing.T) {
	environ := []string{"PATH=/bin", decl.EnvLaunch + "={}", wire.Handshake.MagicCookieKey + "=x", "PLUGIN_MIN_PORT=1",
		"HOME=/h", "KEEP=1", "GRANTED_SECRET=s", "NOT_GRANTED=n", wire.DataFDEnv + "=3", decl.EnvGranted + "=GRANTED_SECRET,KEEP"}
	got := serverEnv(environ, map[string]string{"KEEP": "2", "B": "b", "A": "a"})
	if want := []string{"PATH=/bin", "HOME=/h", "GRANTED_SECRET=s", "A=a", "B=b", "KEEP=2"}; !slices.Equal(got, want) {
		t.Fatalf("serverEnv = %v, want %v", got, want)
	}
}
