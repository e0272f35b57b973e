package e2e_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestRunAPIKeys: `run --api-key` and OPENTOOL_API_KEYS turn on Bearer
// auth for every route; the Go client passes with a key and gets
// *client.UnauthorizedError without one.
func TestRunAPIKeys(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	t.Setenv("OPENTOOL_API_KEYS", "env-1, env-2,")
	hp := startHostProc(t, dir, "--api-key", "flag-1")
	base := hp.url + "/opentool"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A flag replaces the environment variable, as with every urfave/cli flag.
	for key, ok := range map[string]bool{"flag-1": true, "env-2": false, "": false, "wrong": false} {
		c := client.New(client.WithBaseURL(base), client.WithAPIKey(key))
		ret, err := c.Call(ctx, client.FunctionCall{Name: "count"})
		var ue *client.UnauthorizedError
		switch {
		case ok && (err != nil || ret.Result["count"] != float64(2)):
			t.Errorf("key %q: %+v, %v; want count 2", key, ret, err)
		case !ok && !errors.As(err, &ue):
			t.Errorf("key %q: %v; want *client.UnauthorizedError", key, err)
		}
		if _, err := c.Version(ctx); ok != (err == nil) {
			t.Errorf("version with key %q: %v", key, err)
		}
	}
}

func TestRunAPIKeysFromEnv(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	t.Setenv("OPENTOOL_API_KEYS", "env-1, env-2,")
	hp := startHostProc(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for key, ok := range map[string]bool{"env-1": true, "env-2": true, "": false, "env-": false} {
		_, err := client.New(client.WithBaseURL(hp.url+"/opentool"), client.WithAPIKey(key)).Version(ctx)
		if ok != (err == nil) {
			t.Errorf("key %q: %v", key, err)
		}
	}
	if !strings.Contains(hp.logs.String(), "api_keys=2") {
		t.Errorf("the serving log line does not count 2 API keys:\n%s", hp.logs.String())
	}
}

func TestRunBlankAPIKeysRejected(t *testing.T) {
	bin := testkit.Build(t, "./cmd/opentool-host")
	dir := t.TempDir()
	for _, tc := range []struct {
		env  string
		args []string
	}{
		{"", []string{"--api-key", ""}},
		{" , ", nil},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, append([]string{"run", "--dir", dir, "--addr", testkit.FreeAddr(t), "--state-dir", t.TempDir()}, tc.args...)...)
		if tc.env != "" {
			cmd.Env = append(cmd.Environ(), "OPENTOOL_API_KEYS="+tc.env)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "every key is empty") {
			t.Errorf("env %q args %q: %v\n%s\nwant exit status 2 saying every key is empty", tc.env, tc.args, err, out)
		}
	}
}
