package launcher

import (
	"slices"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/process/sandbox"
)

// TestWrap: a plugin whose confinement needs the launcher runs
// behind it with the Spec in its environment; others run as they are.
func TestWrap(t *testing.T) {
	argv, env := []string{"/p/opentool-plugin-x"}, []string{"A=1"}
	launch := []string{"/bin/host", "launch"}

	got, gotEnv, err := Wrap(launch, sandbox.Spec{CPUPercent: 50}, argv, env)
	if err != nil || !slices.Equal(got, argv) || !slices.Equal(gotEnv, env) {
		t.Errorf("no launcher needed: %v %v %v", got, gotEnv, err)
	}

	spec := sandbox.Spec{Confine: true, Read: []string{"/data"}, MemoryBytes: 1 << 30}
	got, gotEnv, err = Wrap(launch, spec, argv, env)
	if err != nil || !slices.Equal(got, []string{"/bin/host", "launch", "--", "/p/opentool-plugin-x"}) {
		t.Fatalf("argv = %v, %v", got, err)
	}
	if len(gotEnv) != 2 || !strings.HasPrefix(gotEnv[1], sandbox.EnvSpec+"=") {
		t.Fatalf("env = %v", gotEnv)
	}
	back, err := sandbox.Decode(strings.TrimPrefix(gotEnv[1], sandbox.EnvSpec+"="))
	if err != nil || !back.Confine || back.MemoryBytes != 1<<30 || !slices.Equal(back.Read, spec.Read) {
		t.Errorf("decoded spec = %+v, %v", back, err)
	}

	if _, _, err := Wrap(nil, spec, argv, env); err == nil || !strings.Contains(err.Error(), "Launcher is empty") {
		t.Errorf("no launcher: err = %v", err)
	}
	spec.Read = []string{"relative"}
	if _, _, err := Wrap(launch, spec, argv, env); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative path: err = %v", err)
	}
}
