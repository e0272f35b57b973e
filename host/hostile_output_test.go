package host_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// selfSignedCertDER is the raw base64 of a fresh self-signed certificate,
// what go-plugin expects as the sixth handshake field.
func selfSignedCertDER(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "evil"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawStdEncoding.EncodeToString(der)
}

// TestHostileOutputCannotCrashTheHost runs a plugin that writes what
// crashed the host through go-plugin: a stderr line of hclog-looking JSON
// whose "@message" is a number (go-plugin's parser does v.(string)), and a
// handshake line with a sixth field holding a valid certificate (go-plugin
// writes it into a nil TLS config). The host runs in this test process, so
// a panic fails the test. The plugin must serve, and its log lines must
// arrive at their levels.
func TestHostileOutputCannotCrashTheHost(t *testing.T) {
	dir := t.TempDir()
	real := testkit.Build(t, "./testkit/plugins/echo")
	script := fmt.Sprintf(`#!/bin/sh
printf '%%s\n' '{"@message": 1, "@level": "error"}' '{"@message": {"x": []}, "@timestamp": 7}' \
	'{"@level":"warn","@message":"structured line","k":"v"}' '[ERROR] prefixed line' >&2
%q | { IFS= read -r line; line=${line%%|}; printf '%%s|%%s|true\n' "$line" %q; exec cat; }
`, real, selfSignedCertDER(t))
	if err := os.WriteFile(filepath.Join(dir, "opentool-plugin-evil"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.Logger = rec.logger })
	if st := pluginStatus(h, "evil"); st.State != "ready" {
		t.Fatalf("evil: %+v", st)
	}
	res := call(t, h, "echo", `{"data":"still here"}`)
	if fmt.Sprint(res["echo"]) != "map[data:still here]" {
		t.Errorf("echo = %v", res)
	}
	rec.waitFor(t, 5*time.Second, "[WARN]", "plugin.evil", "structured line", "k=v", "stream=stderr")
	line := rec.waitFor(t, 5*time.Second, "[ERROR]", "plugin.evil", "prefixed line")
	if strings.Count(line, "[ERROR]") != 1 {
		t.Errorf("the level prefix is logged twice: %q", line)
	}
	rec.waitFor(t, 5*time.Second, "plugin.evil", `{"@message": 1, "@level": "error"}`)
}
