package harness

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestHostEnv: the pairs are appended after base, a word without "=" is
// dropped, base is left as it was, and no pair gives base itself.
func TestHostEnv(t *testing.T) {
	base := []string{"A=1", "GOGC=100"}
	got := HostEnv(base, " GOGC=400\tnoequals =x GOMAXPROCS=1 ")
	want := []string{"A=1", "GOGC=100", "GOGC=400", "GOMAXPROCS=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("HostEnv = %q, want %q", got, want)
	}
	if !slices.Equal(base, []string{"A=1", "GOGC=100"}) {
		t.Fatalf("base changed: %q", base)
	}
	if got := HostEnv(base, "  "); &got[0] != &base[0] || len(got) != len(base) {
		t.Fatalf("HostEnv with no pair = %q, want base itself", got)
	}
}

// TestHostEnvReachesTheProcess: a process started with HostEnv's
// environment sees the later value of a key given twice, as
// StartHostProcess's host sees BENCH_HOST_ENV's.
func TestHostEnvReachesTheProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", `printf %s "$GOGC"`)
	cmd.Env = HostEnv(append(os.Environ(), "GOGC=100"), "GOGC=400")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(out)); v != "400" {
		t.Fatalf("the process saw GOGC=%q, want 400", v)
	}
}
