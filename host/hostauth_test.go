package host_test

import (
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestPluginWithoutHostAuthRefused: a plugin whose SDK does not
// authenticate the host (plain go-plugin, no AutoMTLS: no certificate in
// its handshake, a socket open to any process) is refused at start with
// one line naming the SDK versions that do; the others serve.
func TestPluginWithoutHostAuthRefused(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "noauth", "./testkit/plugins/noauth")
	h := startHost(t, dir, func(c *core.Config) { c.StartTimeout = 10 * time.Second })

	if got := call(t, h, "add", `{"a":1,"b":2}`); got["result"] != 3.0 {
		t.Fatalf("add = %v", got)
	}
	st := pluginStatus(h, "noauth")
	t.Logf("noauth: %s", st.LastError)
	if st.State != core.StateFailed {
		t.Fatalf("noauth is %s, want failed: %+v", st.State, st)
	}
	for _, want := range []string{`plugin "noauth"`, "does not authenticate the host", "AutoMTLS", "Go pluginsdk", "opentool_plugin >= 0.3.0", "opentool-plugin >= 1.1.0"} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("noauth's error %q does not say %q", st.LastError, want)
		}
	}
	if strings.Contains(st.LastError, "\n") {
		t.Errorf("noauth's error is not one line: %q", st.LastError)
	}
}
