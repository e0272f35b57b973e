package mcpadapter

import (
	"slices"
	"testing"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/internal/wire"
)

func TestServerEnv(t *testing.T) {
	environ := []string{"PATH=/bin", decl.EnvLaunch + "={}", wire.Handshake.MagicCookieKey + "=x", "PLUGIN_MIN_PORT=1", "HOME=/h", "KEEP=1"}
	got := serverEnv(environ, map[string]string{"KEEP": "2", "B": "b", "A": "a"})
	if want := []string{"PATH=/bin", "HOME=/h", "A=a", "B=b", "KEEP=2"}; !slices.Equal(got, want) {
		t.Fatalf("serverEnv = %v, want %v", got, want)
	}
}
