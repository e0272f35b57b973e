package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/testkit"
)

// greetServer is a tiny MCP server (stdio, newline-delimited JSON-RPC)
// in Python's standard library; it imports its sibling greeting.py, as
// scripts do (sys.path[0] is the script's folder). Its one tool, hello,
// answers "hello " and the greeting; evil is a line put in before the
// loop that changes the answer.
func greetServer(evil string) string {
	return `import json, sys
from greeting import GREETING
` + evil + `
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg["method"]
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "greet", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": "hello", "description": "Says hello.", "inputSchema": {"type": "object"}}]}
    elif m == "tools/call":
        res = {"content": [{"type": "text", "text": "hello " + GREETING}]}
    elif m == "ping":
        res = {}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "unknown method"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`
}

// writeAtomic writes body to path through a rename, as a swap would.
func writeAtomic(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestLockedInterpreterScript: `python3 ./srv.py` in a NAME.mcp.json.
// `lock` pins the script beside the interpreter; under --locked the
// server runs from its verified copy and still imports its sibling
// module; a swapped srv.py makes /health say the plugin is not pinned
// and, when the server restarts, is refused with the script's path
// instead of being served (issue 30, finding 3).
func TestLockedInterpreterScript(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "srv.py")
	writeAtomic(t, script, greetServer(""), 0o644)
	writeAtomic(t, filepath.Join(dir, "greeting.py"), "GREETING = \"v1\"\n", 0o644)
	writeAtomic(t, filepath.Join(dir, "greet.mcp.json"), `{"mcpServers":{"greet":{"command":"python3","args":["-u","./srv.py"]}}}`, 0o644)

	lockCmd(t, "--dir", dir)
	lock, err := lockfile.Read(filepath.Join(dir, lockfile.Name))
	if err != nil {
		t.Fatal(err)
	}
	if lock.Programs["greet"][script] == "" {
		t.Errorf("lock programs = %v, want the script %s pinned", lock.Programs, script)
	}

	hp := startHostProc(t, dir, "--locked")
	if st := healthOf(t, hp.url)["greet"]; st.Lock != "pinned" {
		t.Fatalf("greet: %+v, want pinned", st)
	}
	hello := func() string {
		_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"hello","id":1}`)
		b, _ := json.Marshal(m)
		return string(b)
	}
	if got := hello(); !strings.Contains(got, "hello v1") {
		t.Fatalf("hello: %s, want hello v1 (the sibling module imported)", got)
	}

	writeAtomic(t, script, greetServer(`GREETING = "evil"`), 0o644)
	if st := healthOf(t, hp.url)["greet"]; st.Lock == "pinned" {
		t.Errorf("greet after srv.py was swapped: %+v, want not pinned", st)
	}
	if got := hello(); strings.Contains(got, "evil") {
		t.Fatalf("the running server ran the swapped script: %s", got)
	}
	pid := pluginPIDs(t, hp.url)["greet"]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "greet refused naming srv.py", func() bool {
		st := healthOf(t, hp.url)["greet"]
		return strings.Contains(st.LastError, script+" changed") && st.Lock != "pinned"
	})
	if got := hello(); strings.Contains(got, "evil") {
		t.Fatalf("the swapped script was served after the restart: %s", got)
	}
}

// TestLockedProgramRenameRace: a declared program is renamed back and
// forth between a good and an evil version while 300 calls run (8 at
// once); no call may run the evil one: the program runs from the
// verified copy made when it was checked, never from its path. Calls
// that find the evil version in place are refused, naming the file
// (issue 30, finding 4).
func TestLockedProgramRenameRace(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog.sh")
	good, evil := filepath.Join(dir, "good.sh"), filepath.Join(dir, "evil.sh")
	writeAtomic(t, good, "#!/bin/sh\necho good\n", 0o755)
	writeAtomic(t, evil, "#!/bin/sh\necho evil\n", 0o755)
	writeAtomic(t, prog, "#!/bin/sh\necho good\n", 0o755)
	writeAtomic(t, filepath.Join(dir, "which.tools.json"), `{"functions":[{"name":"which","description":"Says which version ran.","parameters":[],"command":["./prog.sh"]}]}`, 0o644)
	lockCmd(t, "--dir", dir)
	hp := startHostProc(t, dir, "--locked")

	// The swapper: prog.sh is the good file, then the evil one, by rename.
	stop := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(dir, "prog.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				_ = os.Remove(tmp)
				return
			default:
			}
			src := good
			if i%2 == 0 {
				src = evil
			}
			if os.Link(src, tmp) == nil && os.Rename(tmp, prog) == nil {
				flips.Add(1)
			}
		}
	}()

	const calls, workers = 300, 8
	var next, goods, evils, refused atomic.Int64
	var other sync.Map
	var cw sync.WaitGroup
	for w := 0; w < workers; w++ {
		cw.Add(1)
		go func() {
			defer cw.Done()
			for n := next.Add(1); n <= calls; n = next.Add(1) {
				_, m := rpc(t, hp.url, fmt.Sprintf(`{"jsonrpc":"2.0","method":"which","id":%d}`, n))
				res, _ := m["result"].(map[string]any)
				e, _ := m["error"].(map[string]any)
				msg, _ := e["message"].(string)
				switch out, _ := res["stdout"].(string); {
				case strings.Contains(out, "evil"):
					evils.Add(1)
				case strings.Contains(out, "good"):
					goods.Add(1)
				case strings.Contains(msg, prog+" changed"):
					refused.Add(1)
				default:
					other.Store(n, m)
				}
			}
		}()
	}
	cw.Wait()
	close(stop)
	wg.Wait()
	t.Logf("%d calls: %d good, %d evil, %d refused; %d renames", calls, goods.Load(), evils.Load(), refused.Load(), flips.Load())
	other.Range(func(k, v any) bool {
		t.Errorf("call %v: unexpected answer %v", k, v)
		return true
	})
	if evils.Load() != 0 {
		t.Errorf("%d of %d calls ran the evil program", evils.Load(), calls)
	}
	if goods.Load() == 0 || flips.Load() < 2 {
		t.Errorf("no call ran the good program (%d) or the swapper did not run (%d renames): the test proves nothing", goods.Load(), flips.Load())
	}
}
