package supervise_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os/exec"
	"strings"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestPluginTLSFreshPerStart: every plugin start gets a TLS configuration
// of its own (go-plugin writes the plugin's certificate from the
// handshake into it), all with the host's one P-256 certificate, which
// the plugin's environment entry carries. Two real Go SDK plugins started
// with two of them end up trusting each its own plugin: a shared
// configuration would hold the last one's certificate in both.
func TestPluginTLSFreshPerStart(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/echo")
	type start struct {
		conf *tls.Config
		env  string
	}
	var starts [2]start
	for i := range starts {
		conf, env, err := supervise.PluginTLS()
		if err != nil {
			t.Fatal(err)
		}
		starts[i] = start{conf, env}
	}
	a, b := starts[0], starts[1]
	if a.conf == b.conf {
		t.Fatal("two starts share one *tls.Config")
	}
	if a.env != b.env {
		t.Error("two starts got different host certificates; want one per host process")
	}
	hostCertDER := a.conf.Certificates[0].Certificate[0]
	value, ok := strings.CutPrefix(a.env, wire.ClientCertEnv+"=")
	block, _ := pem.Decode([]byte(value))
	if !ok || block == nil || string(block.Bytes) != string(hostCertDER) {
		t.Fatalf("the environment entry %q is not %s=<the host's certificate as PEM>", a.env, wire.ClientCertEnv)
	}
	leaf, err := x509.ParseCertificate(hostCertDER)
	if err != nil {
		t.Fatal(err)
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("host key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if a.conf.MinVersion != tls.VersionTLS13 || a.conf.ServerName != "localhost" {
		t.Errorf("MinVersion %x ServerName %q, want TLS 1.3 and localhost", a.conf.MinVersion, a.conf.ServerName)
	}

	for _, s := range starts {
		cmd := exec.Command(bin)
		cmd.Env = []string{s.env}
		c := plugin.NewClient(&plugin.ClientConfig{
			HandshakeConfig:  wire.Handshake,
			Plugins:          wire.PluginSet(nil),
			AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
			Cmd:              cmd,
			TLSConfig:        s.conf,
			SkipHostEnv:      true,
			Logger:           testkit.Logger(t),
			StartTimeout:     20 * time.Second,
		})
		t.Cleanup(c.Kill)
		rpc, err := c.Client()
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		raw, err := rpc.Dispense(wire.PluginName)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = raw.(*wire.Client).Load(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Load over TLS: %v", err)
		}
	}
	if a.conf.RootCAs == nil || b.conf.RootCAs == nil {
		t.Fatal("go-plugin did not put the plugins' certificates into the configurations")
	}
	if a.conf.RootCAs.Equal(b.conf.RootCAs) {
		t.Error("both starts trust the same plugin certificate")
	}
}
