package harness

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestHostEnv: the pairs are appended after base, base is left as it
// was, no pair gives base itself, and a word that is not KEY=VALUE is an
// error naming it (before, it was dropped and the run went on without it).
func TestHostEnv(t *testing.T) {
	base := []string{"A=1", "GOGC=100"}
	got, err := HostEnv(base, " GOGC=400\tGOMAXPROCS=1 ")
	want := []string{"A=1", "GOGC=100", "GOGC=400", "GOMAXPROCS=1"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("HostEnv = %q, %v; want %q", got, err, want)
	}
	if !slices.Equal(base, []string{"A=1", "GOGC=100"}) {
		t.Fatalf("base changed: %q", base)
	}
	if got, err := HostEnv(base, "  "); err != nil || &got[0] != &base[0] || len(got) != len(base) {
		t.Fatalf("HostEnv with no pair = %q, %v; want base itself", got, err)
	}
	for _, bad := range []string{"GOGC=400 noequals", "=x", "GOGC"} {
		if got, err := HostEnv(base, bad); err == nil || got != nil {
			t.Errorf("HostEnv(%q) = %q, %v; want an error", bad, got, err)
		} else if !strings.Contains(err.Error(), HostEnvVar) {
			t.Errorf("HostEnv(%q): %v, want the error to name %s", bad, err, HostEnvVar)
		}
	}
}

// TestHostEnvReachesTheProcess: a process started with HostEnv's
// environment sees the later value of a key given twice, as
// StartHostProcess's host sees BENCH_HOST_ENV's.
func TestHostEnvReachesTheProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", `printf %s "$GOGC"`)
	env, err := HostEnv(append(os.Environ(), "GOGC=100"), "GOGC=400")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(out)); v != "400" {
		t.Fatalf("the process saw GOGC=%q, want 400", v)
	}
}
