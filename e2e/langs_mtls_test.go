package e2e_test

// The Python and Node SDKs authenticate the host (issue 30, finding 1):
// go-plugin's AutoMTLS, the host's certificate in PLUGIN_CLIENT_CERT, the
// plugin's in the handshake line's 6th field. The examples are started by
// a go-plugin client configured as the host's (AutoMTLS on), then
// attacked on their socket as a neighbour plugin would: in plaintext, and
// over TLS with a certificate of its own or none.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
	"github.com/opentool-host/opentool-host/testkit"
)

// refusedLine is what the Node and Python SDKs log for a connection
// refused in the TLS handshake (the Python SDK rewrites gRPC core's line
// for it, refusals.py).
const refusedLine = "refused a connection that did not authenticate as the host"

// command is the example plugin run from this checkout with this
// checkout's SDK; env adds variables (go-plugin adds its own).
func (lp langPlugin) command(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	root := testkit.RepoRoot(t)
	cmd := exec.Command(filepath.Join(root, "plugins", "opentool-plugin-"+lp.name))
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"OPENTOOL_" + strings.ToUpper(lp.name) + "_SDK=" + filepath.Join(root, filepath.FromSlash(lp.sdk)),
	}, env...)
	// Its own process group, as the host gives it: the SDK's exit kills
	// its group, never the test's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// startAutoMTLS starts the example with a go-plugin client configured as
// the host's (AutoMTLS on) and returns the client, the Tool client it
// dispensed and the plugin's stderr.
func (lp langPlugin) startAutoMTLS(t *testing.T) (*plugin.Client, *wire.Client, *testkit.SyncBuffer) {
	t.Helper()
	stderr := &testkit.SyncBuffer{}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedPluginSets(nil, nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  wire.DialOptions(1 << 20),
		Cmd:              lp.command(t),
		SkipHostEnv:      true,
		Stderr:           stderr,
		Logger:           testkit.Logger(t),
		StartTimeout:     60 * time.Second,
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("handshake: %v\nplugin stderr:\n%s", err, stderr.String())
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return client, raw.(*wire.Client), stderr
}

// loadAndEcho checks that c loads the example's document and answers
// echo.
func loadAndEcho(t *testing.T, c *wire.Client, stderr *testkit.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	doc, err := c.Load(ctx)
	if err != nil || !strings.Contains(string(doc), `"echo"`) {
		t.Fatalf("Load: %v %.200s\nplugin stderr:\n%s", err, doc, stderr.String())
	}
	out, err := testkit.WireInvoke(ctx, c, "echo", []byte(`{"text":"over mTLS"}`), false)
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0]), `"echo":"over mTLS"`) {
		t.Fatalf("echo: %v %q\nplugin stderr:\n%s", err, out, stderr.String())
	}
}

// TestLanguagePluginAutoMTLS: the Python and Node examples start under a
// host client with AutoMTLS (their handshake carries a certificate, they
// serve TLS that admits the host's certificate), load and answer a call.
// Before, they served plaintext and printed no certificate: the host's
// TLS connection failed.
func TestLanguagePluginAutoMTLS(t *testing.T) {
	forEachLang(t, func(t *testing.T, lp langPlugin) {
		_, c, stderr := lp.startAutoMTLS(t)
		loadAndEcho(t, c, stderr)
	})
}

// attackerCert is a certificate of go-plugin's template that the host
// never saw: what a neighbour plugin can make.
func attackerCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"HashiCorp"}},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// attack dials the plugin's socket with creds and tries Load, Invoke and
// go-plugin's Shutdown; it returns the one that succeeded ("" when all
// were refused).
func attack(t *testing.T, sock string, creds credentials.TransportCredentials) string {
	t.Helper()
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tool := toolpb.NewToolClient(conn)
	if _, err := tool.Load(ctx, &toolpb.LoadRequest{}); err == nil {
		return "Load"
	}
	if s, err := tool.Invoke(ctx); err == nil {
		call := &toolpb.InvokeRequest{Msg: &toolpb.InvokeRequest_Call{Call: &toolpb.Call{Name: "echo", Arguments: []byte(`{"text":"x"}`)}}}
		if s.Send(call) == nil {
			if _, err := s.Recv(); err == nil {
				return "Invoke"
			}
		}
	}
	// go-plugin's GRPCController: its Empty is wire-identical to emptypb's.
	if err := conn.Invoke(ctx, "/plugin.GRPCController/Shutdown", &emptypb.Empty{}, &emptypb.Empty{}); err == nil {
		return "Shutdown"
	}
	return ""
}

// TestLanguagePluginRefusesUnauthenticated: a neighbour that connects to
// the example's socket in plaintext, over TLS with a certificate of its
// own, or over TLS with none, gets no Load, Invoke or Shutdown; the plugin
// keeps serving the host. Both SDKs log the refusals (the Python SDK's
// since its refusals.py; before, it did not). Before, every one of these
// calls succeeded (the plugin authenticated nobody).
func TestLanguagePluginRefusesUnauthenticated(t *testing.T) {
	forEachLang(t, func(t *testing.T, lp langPlugin) {
		client, c, stderr := lp.startAutoMTLS(t)
		rc := client.ReattachConfig()
		if rc == nil || rc.Addr == nil || rc.Addr.Network() != "unix" {
			t.Fatalf("no unix socket to attack: %+v", rc)
		}
		sock := rc.Addr.String()
		own := attackerCert(t)
		for _, a := range []struct {
			name  string
			creds credentials.TransportCredentials
		}{
			{"plaintext", insecure.NewCredentials()},
			// The server's certificate is not checked: the attacker gets
			// every chance.
			{"own certificate", credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{own}, InsecureSkipVerify: true, ServerName: "localhost"})},
			{"no certificate", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, ServerName: "localhost"})},
		} {
			if got := attack(t, sock, a.creds); got != "" {
				t.Errorf("%s: %s succeeded on the plugin's socket", a.name, got)
			}
		}
		if client.Exited() {
			t.Fatalf("the plugin exited under attack\nplugin stderr:\n%s", stderr.String())
		}
		loadAndEcho(t, c, stderr)
		testkit.Eventually(t, 30*time.Second, "the refusal logged", func() bool {
			return strings.Contains(stderr.String(), refusedLine)
		})
	})
}

// TestLanguagePluginWithoutClientCert: started without the host's
// certificate (an older host, or someone else), or with something that is
// not one certificate, the example does not serve: no handshake line, exit
// status 1, a line saying why. Before, it served plaintext.
func TestLanguagePluginWithoutClientCert(t *testing.T) {
	forEachLang(t, func(t *testing.T, lp langPlugin) {
		for _, tc := range []struct{ name, env, want string }{
			{"unset", "", "PLUGIN_CLIENT_CERT is not set: this SDK serves only an opentool-host that authenticates itself with mTLS"},
			{"not a certificate", "PLUGIN_CLIENT_CERT=hello", "PLUGIN_CLIENT_CERT must hold exactly one PEM certificate"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				env := []string{wire.Handshake.MagicCookieKey + "=" + wire.Handshake.MagicCookieValue,
					"PLUGIN_PROTOCOL_VERSIONS=2,3", "PLUGIN_UNIX_SOCKET_DIR=" + t.TempDir()}
				if tc.env != "" {
					env = append(env, tc.env)
				}
				cmd := lp.command(t, env...)
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
				if line, err := bufio.NewReader(stdout).ReadString('\n'); err == nil {
					t.Fatalf("served without the host's certificate: handshake %q", line)
				}
				var exit *exec.ExitError
				if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
					t.Fatalf("exit: %v, want status 1\nstderr:\n%s", err, stderr.String())
				}
				if !strings.Contains(stderr.String(), tc.want) {
					t.Fatalf("stderr does not say %q:\n%s", tc.want, stderr.String())
				}
			})
		}
	})
}
