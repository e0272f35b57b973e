package cmdtool

import (
	"context"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// TestMissingProgramKeepsThePATH: a program gone by the time of a call
// fails the call naming the program, and the caller's error holds no
// folder of the plugin's PATH (the host's own, when nothing set it).
func TestMissingProgramKeepsThePATH(t *testing.T) {
	cmds, err := decl.ParseCommands([]byte(`{"functions":[{"name":"frob","description":"Frobnicates.","command":["frobnicate","x"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	path := "/opt/host-secret-bin:" + t.TempDir()
	tool := New(decl.Launch{Name: "ft", Dir: t.TempDir(), Commands: cmds}, &launcher.Starter{Env: []string{"PATH=" + path}})
	_, err = tool.CallJSON(context.Background(), "frob", []byte(`{}`))
	if err == nil || strings.Contains(err.Error(), "host-secret-bin") || strings.Contains(err.Error(), path) {
		t.Fatalf("call error = %v; want one that shows no folder of the PATH", err)
	}
	if !strings.Contains(err.Error(), `the plugin's program "frobnicate" is not installed`) {
		t.Errorf("call error = %v; want it to name the program", err)
	}
}
