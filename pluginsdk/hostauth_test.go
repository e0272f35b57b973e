package pluginsdk_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/testutil"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// TestServeRefusesWithoutHostCert: a plugin started with the host's
// magic cookie but without go-plugin's AutoMTLS certificate
// (PLUGIN_CLIENT_CERT) does not fall back to serving its socket in
// plaintext: it prints no handshake and exits with status 1, saying why.
func TestServeRefusesWithoutHostCert(t *testing.T) {
	bin := testutil.Build(t, "./internal/testplugins/echo")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), wire.Handshake.MagicCookieKey + "=" + wire.Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=2,3", "PLUGIN_UNIX_SOCKET_DIR=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("it printed a handshake: %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "refusing to serve without host authentication: PLUGIN_CLIENT_CERT is not set") {
		t.Errorf("stderr does not say why: %s", stderr.String())
	}
}
