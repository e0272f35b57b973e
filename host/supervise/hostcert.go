package supervise

import (
	"crypto/tls"
	"fmt"
	"sync"

	"github.com/opentool-host/opentool-host/internal/wire"
)

// hostCert is the host's client certificate (ECDSA P-256, wire.NewCert)
// and its PEM, made once per host process on the first plugin start. The
// private key never leaves the host's memory; every plugin gets the
// certificate (wire.ClientCertEnv) and accepts only connections that
// prove they hold its key.
var hostCert = sync.OnceValues(func() (tls.Certificate, error) { return wire.NewCert() })

// PluginTLS returns the TLS configuration of one plugin start (new on
// every call: go-plugin sets its RootCAs and ClientCAs to the certificate
// in that plugin's handshake) and the wire.ClientCertEnv entry
// (KEY=PEM) for the plugin's environment. Errors: the host's certificate
// could not be made.
func PluginTLS() (*tls.Config, string, error) {
	cert, err := hostCert()
	if err != nil {
		return nil, "", fmt.Errorf("host authentication: %w", err)
	}
	return wire.MTLSConfig(cert, nil), wire.ClientCertEnv + "=" + wire.CertPEM(cert), nil
}
