package wire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// ClientCertEnv is the variable that gives a plugin the host's client
// certificate (PEM) for this start, as go-plugin's AutoMTLS names it. The
// plugin answers with a certificate of its own in the handshake's sixth
// field (base64 DER, RawStdEncoding) and accepts only TLS connections
// that present the host's certificate.
const ClientCertEnv = "PLUGIN_CLIENT_CERT"

// certValidity is how long a host or plugin certificate is valid, as
// go-plugin's AutoMTLS certificates (30 years: they live as long as the
// process, which is what bounds them).
const certValidity = 262980 * time.Hour

// NewCert makes a fresh ECDSA P-256 key and a self-signed certificate for
// it, in the shape of go-plugin's AutoMTLS certificates: common name and
// DNS name "localhost", a CA (key usage includes certificate signing),
// extended key usage client and server authentication, valid from 30 s
// ago. P-256 rather than go-plugin's P-521: about 30 times cheaper to
// make and to sign with, which is most of a plugin's cold start. The
// private key exists only in the returned tls.Certificate (its Leaf is
// set). Errors: the random source's or crypto/x509's.
func NewCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate key: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate serial: %w", err)
	}
	now := time.Now()
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: mtlsServerName},
		DNSNames:              []string{mtlsServerName},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          sn,
		NotBefore:             now.Add(-30 * time.Second),
		NotAfter:              now.Add(certValidity),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// CertPEM is cert's leaf as a PEM "CERTIFICATE" block: the value of
// ClientCertEnv.
func CertPEM(cert tls.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
}

// CertField is cert's leaf as the handshake's sixth field: base64
// (RawStdEncoding) of its DER.
func CertField(cert tls.Certificate) string {
	return base64.RawStdEncoding.EncodeToString(cert.Certificate[0])
}

// mtlsServerName is the name both sides' certificates carry and the
// host verifies.
const mtlsServerName = "localhost"

// MTLSConfig returns a new TLS configuration for one side of the host
// authentication: own is this side's certificate, peers the only
// certificates the other side may present (nil: set later, as go-plugin
// does on the host side from the handshake's sixth field). Both sides
// require and verify the other's certificate, TLS 1.3 at least, server
// name "localhost". Every call returns a new *tls.Config: go-plugin
// writes into the one it is given.
func MTLSConfig(own tls.Certificate, peers *x509.CertPool) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{own},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    peers,
		RootCAs:      peers,
		MinVersion:   tls.VersionTLS13,
		ServerName:   mtlsServerName,
	}
}
