package e2e_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestUsageErrorsAreOneLine: an unknown flag or command, a flag value that
// does not parse and an argument a command does not take each print one
// line and a hint on stderr (never the help text), nothing on stdout, and
// exit with status 2.
func TestUsageErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // the first line of stderr; the hint follows
		hint string
	}{
		{[]string{"run", "--frob"}, "unknown flag --frob", "run"},
		{[]string{"run", "--dir", dir, "-frob=1"}, "unknown flag --frob", "run"},
		{[]string{"list", "--dir", dir, "--frob"}, "unknown flag --frob", "list"},
		{[]string{"export", "--format", "openai", "--frob"}, "unknown flag --frob", "export"},
		{[]string{"call", "--dir", dir, "add", "--frob"}, "unknown flag --frob", "call"},
		{[]string{"validate", "--frob", "x.json"}, "unknown flag --frob", "validate"},
		{[]string{"--frob"}, "unknown flag --frob", ""},
		// An unknown flag close to a known one names it.
		{[]string{"run", "-dri", dir}, "unknown flag --dri; did you mean --dir?", "run"},
		{[]string{"run", "--call-timout", "5s"}, "unknown flag --call-timout; did you mean --call-timeout?", "run"},
		{[]string{"frob"}, `unknown command "frob"`, ""},
		{[]string{"frob", "--dir", dir}, `unknown command "frob"`, ""},
		{[]string{"help", "frob"}, `unknown command "frob"`, ""},
		{[]string{"list", "--dir", dir, "--max-concurrency", "lots"}, `invalid value "lots" for --max-concurrency`, "list"},
		{[]string{"run", "--call-timeout", "5"}, `invalid value "5" for --call-timeout: a duration needs a unit, such as 5s, 500ms or 2m`, "run"},
		{[]string{"run", "plugins"}, `run: unexpected argument "plugins" (it takes flags only)`, "run"},
		{[]string{"version", "now"}, `version: unexpected argument "now" (it takes flags only)`, "version"},
		{[]string{"export", "--dir", dir}, "export: give --format openai, openai-chat, anthropic or opentool", "export"},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		cmd := "opentool-host"
		if tc.hint != "" {
			cmd += " " + tc.hint
		}
		want := "opentool-host: " + tc.want + "\nRun '" + cmd + " --help' for usage.\n"
		if code != 2 || stderr != want || stdout != "" {
			t.Errorf("%q: exit %d\nstdout %q\nstderr %q\nwant exit 2, no stdout, stderr %q", tc.args, code, stdout, stderr, want)
		}
	}
}

// TestHelpStillWorks: --help, -h and "help COMMAND" print the help on
// stdout and exit 0, and "help" is no longer a subcommand that would
// swallow a FUNCTION or FILE argument named "help".
func TestHelpStillWorks(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {}, {"help"}, {"help", "run"}, {"run", "--help"}, {"list", "-h"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "USAGE:") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the help and exit 0", args, code, stdout, stderr)
		}
	}
	stdout, _, _ := runCLI(t, "run", "--help")
	for _, flag := range []string{"--max-result BYTES", "--max-queue N", "--plugin-env NAME", "--prefix-collisions"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("run --help does not document %s:\n%s", flag, stdout)
		}
	}
	// A file named "help" is validated, not taken for the help command.
	stdout, _, code := runCLI(t, "validate", "help")
	if code != 1 || !strings.HasPrefix(stdout, "help: open help: no such file") {
		t.Errorf("validate help: exit %d, stdout %q; want the missing file reported", code, stdout)
	}
}

// TestDirAndURLAmbiguous: list and export refuse --dir together with
// --url (also when --dir comes from OPENTOOL_PLUGIN_DIR) with one line and
// exit status 2, before starting any plugin or reading any host.
func TestDirAndURLAmbiguous(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	state := t.TempDir()
	url := "http://" + testkit.FreeAddr(t) // nothing listens there
	for _, args := range [][]string{
		{"list", "--dir", dir, "--url", url},
		{"list", "--url", url, "-d", dir, "--json"},
		{"export", "--format", "openai", "--dir", dir, "--url", url},
		{"export", "--url=" + url, "--dir=" + dir, "--format", "anthropic"},
	} {
		stdout, stderr, code := runCLI(t, append(args, "--state-dir", state)...)
		want := "opentool-host: " + args[0] + ": --dir and --url are both given; give one: --dir starts the plugins, --url reads a running host\n"
		if code != 2 || stderr != want || stdout != "" {
			t.Errorf("%q: exit %d\nstdout %q\nstderr %q\nwant exit 2, no stdout, stderr %q", args, code, stdout, stderr, want)
		}
	}
	t.Setenv("OPENTOOL_PLUGIN_DIR", dir)
	_, stderr, code := runCLI(t, "list", "--url", url, "--state-dir", state)
	if code != 2 || !strings.Contains(stderr, "--dir and --url are both given (--dir may come from OPENTOOL_PLUGIN_DIR)") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("OPENTOOL_PLUGIN_DIR and --url: exit %d, stderr %q; want 2 naming OPENTOOL_PLUGIN_DIR", code, stderr)
	}
	// Nothing was started: the host never made its state folder.
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Errorf("state dir after refusals: %v, %v; want empty", entries, err)
	}
}

// TestOutOfRangeFlagsRefused: a flag value out of its range is refused
// with the flag's name and the range, exit status 2, instead of being
// replaced by the default; the bounds themselves are accepted.
func TestOutOfRangeFlagsRefused(t *testing.T) {
	dir := t.TempDir() // no plugins: list returns at once when it accepts the flags
	for _, tc := range []struct {
		cmd        string // list for the host flags, run for run's own
		flag, val  string // val as the error shows it (durations as parsed)
		wantSuffix string
	}{
		{"list", "max-concurrency", "0", "must be at least 1"},
		{"list", "max-concurrency", "-4", "must be at least 1"},
		{"list", "call-timeout", "0s", "must be greater than 0 (e.g. 30s)"},
		{"list", "call-timeout", "-1m0s", "must be greater than 0 (e.g. 30s)"},
		{"list", "start-timeout", "0s", "must be greater than 0 (e.g. 30s)"},
		{"list", "max-result", "0", "must be at least 1"},
		{"list", "max-queue", "-1", "must be at least 0"},
		{"run", "shutdown-timeout", "0s", "must be greater than 0 (e.g. 30s)"},
		{"run", "shutdown-timeout", "-5s", "must be greater than 0 (e.g. 30s)"},
		{"run", "max-body", "0", "must be at least 1"},
		{"run", "max-body", "-1", "must be at least 1"},
		{"run", "max-concurrency", "0", "must be at least 1"},
	} {
		args := []string{tc.cmd, "--dir", dir, "--state-dir", t.TempDir(), "--" + tc.flag, tc.val}
		if tc.cmd == "run" {
			args = append(args, "--addr", testkit.FreeAddr(t))
		}
		stdout, stderr, code := runCLI(t, args...)
		want := "opentool-host: invalid value " + tc.val + " for --" + tc.flag + ": " + tc.wantSuffix + "\nRun 'opentool-host " + tc.cmd + " --help' for usage.\n"
		if code != 2 || stderr != want || stdout != "" {
			t.Errorf("%s --%s %s: exit %d\nstdout %q\nstderr %q\nwant exit 2, stderr %q", tc.cmd, tc.flag, tc.val, code, stdout, stderr, want)
		}
	}

	// The bounds are in range.
	stdout, stderr, code := runCLI(t, "list", "--dir", dir, "--state-dir", t.TempDir(), "--max-concurrency", "1", "--max-queue", "0",
		"--max-result", "1", "--call-timeout", "1ms", "--start-timeout", "1ms")
	if code != 0 || !strings.Contains(stdout, "PLUGIN") {
		t.Errorf("list with flags at their bounds: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestHostFlagsReachTheHost: --max-result and --plugin-env of a real
// process reach its host.
func TestHostFlagsReachTheHost(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "rogue", "./testkit/plugins/rogue")

	// A 2 MiB result passes the default 16 MiB cap and not a 1 MiB one.
	stdout, stderr, code := runCLI(t, "call", "--dir", dir, "--state-dir", t.TempDir(), "big", "--params", `{"mb":2}`)
	if code != 0 || len(stdout) < 2<<20 {
		t.Errorf("2 MiB result under the default cap: exit %d, %d bytes, stderr %s", code, len(stdout), stderr)
	}
	stdout, stderr, code = runCLI(t, "call", "--dir", dir, "--state-dir", t.TempDir(), "--max-result", "1048576", "big", "--params", `{"mb":2}`)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "larger than the limit of 1048576 bytes") {
		t.Errorf("2 MiB result over --max-result 1048576: exit %d, %d bytes, stderr %s", code, len(stdout), stderr)
	}

	// --plugin-env passes a variable the allow-list would drop.
	t.Setenv("PLUGIN_TEST_PASSED", "yes")
	t.Setenv("PLUGIN_TEST_DROPPED", "no")
	hp := startHostProc(t, dir, "--plugin-env", "PLUGIN_TEST_PASSED")
	env := environ(t, pluginPIDs(t, hp.url)["rogue"])
	if env["PLUGIN_TEST_PASSED"] != "yes" {
		t.Errorf("--plugin-env PLUGIN_TEST_PASSED did not reach the plugin")
	}
	if _, ok := env["PLUGIN_TEST_DROPPED"]; ok {
		t.Errorf("PLUGIN_TEST_DROPPED reached the plugin without --plugin-env")
	}
}

// TestMessagesSayWhatToDo: the mistakes of a first hour get a message
// that says what to do (issue 23): a missing plugins folder says where it
// looked and how to choose another, a port in use names --addr and make
// run ADDR=, call with a JSON argument points at --params, and an unknown
// function is named once.
func TestMessagesSayWhatToDo(t *testing.T) {
	empty := t.TempDir()
	wd := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--addr", "127.0.0.1:0"}, 1, "plugins folder plugins not found (looked for " + filepath.Join(wd, "plugins") + "): --dir defaults to ./plugins in the working folder; give --dir PATH or create the folder"},
		{[]string{"call", "--dir", empty, "add", `{"a":1}`}, 2, `call: arguments go in --params: opentool-host call add --params '{"a":1}'`},
		{[]string{"call", "--dir", empty, "--state-dir", t.TempDir(), "nope"}, 1, `opentool-host: call: function "nope" is not served` + "\n"},
		{[]string{"validate", testkit.Build(t, "./plugins/calculator")}, 1, "an executable, not a document: validate reads OpenTool documents and declaration files; a plugin prints its document with --document"},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cases = append(cases, struct {
		args []string
		code int
		want string
	}{[]string{"run", "--dir", empty, "--state-dir", t.TempDir(), "--addr", ln.Addr().String()}, 1,
		"listen: " + ln.Addr().String() + " is in use by another process: stop it, or serve on another address with --addr HOST:PORT (make run ADDR=HOST:PORT)"})
	bin := testkit.Build(t, "./cmd/opentool-host")
	for _, c := range cases {
		cmd := exec.Command(bin, c.args...)
		cmd.Dir = wd
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("%q: exit %d\n%s\nwant exit %d and %q", c.args, code, out, c.code, c.want)
		}
	}
}
