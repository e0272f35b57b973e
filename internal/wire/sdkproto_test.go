package wire_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestSDKProtoCopies checks that the .proto files the Node SDK loads at run
// time (pluginsdk/node/proto) are the host's tool.proto, the Python SDK's
// health.proto and go-plugin's own grpc_controller.proto and
// grpc_stdio.proto of the version go.mod requires. scripts/genproto.sh
// copies them.
func TestSDKProtoCopies(t *testing.T) {
	root := testkit.RepoRoot(t)
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hashicorp/go-plugin").Output()
	if err != nil {
		t.Fatalf("go list go-plugin: %v", err)
	}
	goPlugin := strings.TrimSpace(string(out))
	for copyName, src := range map[string]string{
		"tool.proto":            filepath.Join(root, "internal", "wire", "toolpb", "tool.proto"),
		"health.proto":          filepath.Join(root, "pluginsdk", "python", "proto", "health.proto"),
		"grpc_controller.proto": filepath.Join(goPlugin, "internal", "plugin", "grpc_controller.proto"),
		"grpc_stdio.proto":      filepath.Join(goPlugin, "internal", "plugin", "grpc_stdio.proto"),
	} {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "pluginsdk", "node", "proto", copyName))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("pluginsdk/node/proto/%s differs from %s: run scripts/genproto.sh", copyName, src)
		}
	}
}
