package pluginsdk

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/grpclog"

	"github.com/opentool-host/opentool-host/internal/wire"
)

// ClientCertEnv is the variable of go-plugin's AutoMTLS protocol that
// gives the plugin the PEM certificate of the host that started it. The
// plugin answers with a certificate of its own (ECDSA P-256, made at
// start) in the handshake's sixth field and then accepts only TLS 1.3
// connections that present the host's certificate; every other
// connection to the plugin's socket (a neighbour plugin that found it in
// /proc/net/unix) is refused before any RPC.
const ClientCertEnv = wire.ClientCertEnv

// errNoClientCert is why a plugin started without ClientCertEnv does not
// serve: it would serve its socket in plaintext, to anyone who can reach
// it.
var errNoClientCert = errors.New("refusing to serve without host authentication: " + ClientCertEnv +
	" is not set (this opentool-host plugin SDK serves only over go-plugin's AutoMTLS, so that no process but the host that started it can call it); run it under an opentool-host with AutoMTLS")

// RefusedConnMsg is the line a plugin logs (at warn, on its stderr, which
// the host logs under the plugin's name) for every connection to its
// socket that failed the TLS handshake: no TLS, or a certificate that is
// not the host's. Its "error" field says how it failed.
const RefusedConnMsg = "refused a connection that did not authenticate as the host"

// hostTLS returns the plugin's TLS configuration, with a new P-256
// certificate of its own (wire.NewCert) and the host's (ClientCertEnv)
// the only client certificate it accepts, and the handshake's sixth field
// (the plugin's certificate, wire.CertField). Errors: errNoClientCert
// when the host gave no certificate; an error naming ClientCertEnv when
// its value holds no PEM certificate; wire.NewCert's.
func hostTLS() (*tls.Config, string, error) {
	hostPEM := os.Getenv(ClientCertEnv)
	if hostPEM == "" {
		return nil, "", errNoClientCert
	}
	host := x509.NewCertPool()
	if !host.AppendCertsFromPEM([]byte(hostPEM)) {
		return nil, "", fmt.Errorf("refusing to serve: %s holds no PEM certificate", ClientCertEnv)
	}
	own, err := wire.NewCert()
	if err != nil {
		return nil, "", fmt.Errorf("refusing to serve: %w", err)
	}
	return wire.MTLSConfig(own, host), wire.CertField(own), nil
}

// serverTLS is hostTLS's configuration, for plugin.Serve, once
// certifyHandshake has been set up to put the plugin's certificate into
// the handshake. Errors: hostTLS's and certifyHandshake's.
func serverTLS() (*tls.Config, error) {
	c, field, err := hostTLS()
	if err != nil {
		return nil, err
	}
	return c, certifyHandshake(field)
}

// certifyHandshake makes go-plugin's handshake line carry field as its
// sixth field. With a ServeConfig.TLSProvider, plugin.Serve prints the
// line with that field empty, with fmt.Printf to os.Stdout, and only then
// points os.Stdout at its own pipe. certifyHandshake points os.Stdout at
// a pipe first: the first line written to it goes to the real stdout with
// the field filled in (certifiedLine), whatever follows unchanged. Call it
// right before plugin.Serve. Errors: os.Pipe's.
func certifyHandshake(field string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("handshake pipe: %w", err)
	}
	out := os.Stdout
	os.Stdout = w
	go func() {
		in := bufio.NewReader(r)
		line, err := in.ReadString('\n')
		if _, werr := io.WriteString(out, certifiedLine(line, field)); werr != nil || err != nil {
			return
		}
		_, _ = io.Copy(out, in)
	}()
	return nil
}

// certifiedLine is go-plugin's handshake line (fields separated by "|",
// ending in a newline) with field as its sixth field when that was
// empty, and otherwise unchanged: a line that is not such a handshake
// reaches the host as it is, which refuses a handshake without a
// certificate. go-plugin's optional seventh field (gRPC broker
// multiplexing) is kept.
func certifiedLine(line, field string) string {
	body, nl := strings.CutSuffix(line, "\n")
	fields := strings.Split(body, "|")
	if len(fields) < 6 || fields[5] != "" {
		return line
	}
	fields[5] = field
	out := strings.Join(fields, "|")
	if nl {
		out += "\n"
	}
	return out
}

// refusedConnLogger is gRPC's logger in a served plugin: gRPC reports a
// connection whose TLS handshake failed only as an info line ("grpc:
// Server.Serve failed to create ServerTransport: ..."), which this turns
// into RefusedConnMsg on the plugin's logger. Everything else goes to
// grpclog's default (errors to stderr).
type refusedConnLogger struct {
	grpclog.LoggerV2
	log hclog.Logger
}

// transportFailure marks gRPC's line for a connection it dropped before
// any RPC (the TLS handshake failed).
const transportFailure = "failed to create ServerTransport"

func (l refusedConnLogger) Info(args ...any)            { l.info(fmt.Sprint(args...)) }
func (l refusedConnLogger) Infoln(args ...any)          { l.info(fmt.Sprintln(args...)) }
func (l refusedConnLogger) Infof(f string, args ...any) { l.info(fmt.Sprintf(f, args...)) }

func (l refusedConnLogger) info(msg string) {
	if _, why, ok := strings.Cut(msg, transportFailure); ok {
		l.log.Warn(RefusedConnMsg, "error", strings.TrimSpace(strings.TrimPrefix(why, ":")))
	}
}

// logRefusedConns installs refusedConnLogger for log as gRPC's logger;
// call it before any gRPC server exists.
func logRefusedConns(log hclog.Logger) {
	grpclog.SetLoggerV2(refusedConnLogger{LoggerV2: grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr), log: log})
}
