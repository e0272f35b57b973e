package pluginsdk_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestServeRefusesWithoutHostCert: a plugin started with the host's
// magic cookie but without go-plugin's AutoMTLS certificate
// (PLUGIN_CLIENT_CERT) does not fall back to serving its socket in
// plaintext: it prints no handshake and exits with status 1, saying why.
func TestServeRefusesWithoutHostCert(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/echo")
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

// TestServeAcceptsOnlyTheHostsCert: a Go SDK plugin started with the
// host's certificate (PLUGIN_CLIENT_CERT) answers with an ECDSA P-256
// certificate of its own in the handshake's sixth field and serves gRPC over TLS 1.3
// to the holder of the host's key only: a client with another
// certificate, or offering TLS 1.2 at most, is refused, and the refusal
// logged.
func TestServeAcceptsOnlyTheHostsCert(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/echo")
	hostCert, err := wire.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), wire.Handshake.MagicCookieKey + "=" + wire.Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=2,3", "PLUGIN_UNIX_SOCKET_DIR=" + t.TempDir(),
		wire.ClientCertEnv + "=" + wire.CertPEM(hostCert)}
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("handshake: %v\nstderr: %s", err, stderr.String())
	}
	fields := strings.Split(strings.TrimSuffix(line, "\n"), "|")
	if len(fields) != 6 || fields[2] != "unix" || fields[4] != "grpc" {
		t.Fatalf("handshake %q: want 6 fields, unix, grpc", line)
	}
	der, err := base64.RawStdEncoding.DecodeString(fields[5])
	if err != nil {
		t.Fatalf("sixth field: %v", err)
	}
	pluginCert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("sixth field: %v", err)
	}
	if pub, ok := pluginCert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("plugin key %T, want ECDSA P-256", pluginCert.PublicKey)
	}
	roots := x509.NewCertPool()
	roots.AddCert(pluginCert)
	otherCert, err := wire.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	tls12 := wire.MTLSConfig(hostCert, roots)
	tls12.MinVersion, tls12.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	check := func(conf *tls.Config) error {
		conn, err := grpc.NewClient("unix:"+fields[3], grpc.WithTransportCredentials(credentials.NewTLS(conf)))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "plugin"})
		return err
	}
	if err := check(wire.MTLSConfig(hostCert, roots)); err != nil {
		t.Fatalf("the host's certificate was refused: %v\nstderr: %s", err, stderr.String())
	}
	for name, conf := range map[string]*tls.Config{"another certificate": wire.MTLSConfig(otherCert, roots), "TLS 1.2": tls12} {
		if err := check(conf); err == nil {
			t.Errorf("%s was served", name)
		}
	}
	testkit.Eventually(t, 10*time.Second, "two refusals logged", func() bool {
		return strings.Count(stderr.String(), pluginsdk.RefusedConnMsg) >= 2
	})
}
