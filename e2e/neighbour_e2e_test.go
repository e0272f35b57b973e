package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestPluginCannotCallItsNeighbours: a hostile plugin (intruder) finds
// the go-plugin socket of its neighbour (vault, which holds a secret of
// the operator's) in /proc/self/net/unix and tries Invoke, Load and
// GRPCController/Shutdown on it, in plaintext and over TLS with a
// certificate of its own (issue 30, finding 1): with the host's AutoMTLS
// every attempt fails, the secret does not leak, the neighbour keeps
// serving in the same process, and it logs each refused connection
// under its name. Unconfined, under --sandbox --sandbox-deny-network and
// under --plugin-user 65534 (where every plugin runs as the same user).
func TestPluginCannotCallItsNeighbours(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		skip func(t *testing.T)
	}{
		{"unconfined", nil, func(*testing.T) {}},
		{"sandbox", []string{"--sandbox", "--sandbox-deny-network"}, landlockOrSkip},
		{"plugin-user", []string{"--plugin-user", "65534"}, rootOrSkip},
		{"sandbox-plugin-user", []string{"--sandbox", "--sandbox-deny-network", "--plugin-user", "65534"}, func(t *testing.T) {
			landlockOrSkip(t)
			rootOrSkip(t)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.skip(t)
			testNeighbourAttack(t, c.args)
		})
	}
}

// rootOrSkip skips a test that needs the host to run as root.
func rootOrSkip(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("--plugin-user needs the host to run as root")
	}
}

// attackReport is the intruder's answer.
type attackReport struct {
	OwnDir   string   `json:"own_dir"`
	Sockets  []string `json:"sockets"`
	Attempts []struct {
		Socket, RPC, Mode, Error, Result string
		OK                               bool
	} `json:"attempts"`
}

func testNeighbourAttack(t *testing.T, extra []string) {
	const token = "vault-token-3f9a1c-do-not-leak"
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // --plugin-user reads it
		t.Fatal(err)
	}
	testkit.InstallPlugin(t, dir, "vault", "./testkit/plugins/faulty")
	testkit.InstallPlugin(t, dir, "intruder", "./testkit/plugins/intruder")
	if err := os.WriteFile(filepath.Join(dir, "vault.policy.json"), []byte(`{"prefix":"vault_","secrets":{"VAULT_TOKEN":"vault-token"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_VAULT_TOKEN", token)
	// The plugin user must traverse to the state folder (t.TempDir's
	// folders are 0700), as in TestPluginUser.
	state := t.TempDir()
	if err := os.Chmod(filepath.Dir(state), 0o711); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, append([]string{"--secret", "vault-token=env:TEST_VAULT_TOKEN", "--secret-for", "vault-token=vault", "--state-dir", state}, extra...)...)

	vaultPID := pluginPIDs(t, hp.url)["vault"]
	if got := vaultEnv(t, hp.url); got != token {
		t.Fatalf("vault does not hold its secret: %q\n%s", got, hp.logs.String())
	}
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"attack","params":{"call":"env"},"id":1}`)
	raw, _ := json.Marshal(m["result"])
	var rep attackReport
	if err := json.Unmarshal(raw, &rep); err != nil || m["error"] != nil {
		t.Fatalf("attack: %v %v", m, err)
	}
	t.Logf("the intruder's report: %s", raw)
	if len(rep.Sockets) == 0 {
		t.Fatalf("the intruder found no neighbour socket (own dir %s): the attack was not tried: %s", rep.OwnDir, raw)
	}
	for _, sock := range rep.Sockets {
		checkSocketPath(t, sock)
	}
	if len(rep.Attempts) != 6*len(rep.Sockets) {
		t.Errorf("%d attempts on %d sockets, want 6 each", len(rep.Attempts), len(rep.Sockets))
	}
	for _, a := range rep.Attempts {
		if a.OK {
			t.Errorf("%s %s on %s succeeded: %s", a.Mode, a.RPC, a.Socket, a.Result)
		}
	}
	if strings.Contains(string(raw), token) {
		t.Errorf("the intruder read vault's secret: %s", raw)
	}
	// The neighbour still serves, in the same process (not stopped and
	// restarted).
	if got := vaultEnv(t, hp.url); got != token {
		t.Errorf("vault after the attack: %q", got)
	}
	if pid := pluginPIDs(t, hp.url)["vault"]; pid != vaultPID {
		t.Errorf("vault's pid %d became %d: it was stopped", vaultPID, pid)
	}
	// vault logged the refusals (plaintext, and a certificate not the
	// host's), under its name.
	for _, why := range []string{"first record does not look like a TLS handshake", "failed to verify certificate"} {
		testkit.Eventually(t, 10*time.Second, "vault logs a refused connection ("+why+")", func() bool {
			for _, line := range strings.Split(hp.logs.String(), "\n") {
				if strings.Contains(line, pluginsdk.RefusedConnMsg) && strings.Contains(line, "plugin.vault") && strings.Contains(line, why) {
					return true
				}
			}
			return false
		})
	}
	if testing.Verbose() {
		for _, line := range strings.Split(hp.logs.String(), "\n") {
			if strings.Contains(line, pluginsdk.RefusedConnMsg) {
				t.Log(line)
			}
		}
	}
}

// checkSocketPath: a plugin's socket folder (go-plugin's plugin-dir) is
// the host's and open to no one else but the plugin user's group; the
// socket folder above it is the host's and writable by no one else.
func checkSocketPath(t *testing.T, sock string) {
	t.Helper()
	for _, c := range []struct {
		dir  string
		deny os.FileMode
	}{{filepath.Dir(sock), 0o007}, {filepath.Dir(filepath.Dir(sock)), 0o022}} {
		fi, err := os.Stat(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&c.deny != 0 || int(st.Uid) != os.Geteuid() {
			t.Errorf("%s is %v, uid %d: want the host's (uid %d), no %v", c.dir, fi.Mode().Perm(), st.Uid, os.Geteuid(), c.deny)
		}
	}
}

// vaultEnv calls vault_env and returns its VAULT_TOKEN.
func vaultEnv(t *testing.T, url string) string {
	t.Helper()
	_, m := rpc(t, url, `{"jsonrpc":"2.0","method":"vault_env","id":1}`)
	res, _ := m["result"].(map[string]any)
	env, _ := res["env"].(map[string]any)
	s, _ := env["VAULT_TOKEN"].(string)
	return s
}
