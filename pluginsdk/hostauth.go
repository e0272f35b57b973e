package pluginsdk

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/grpclog"
)

// ClientCertEnv is go-plugin's AutoMTLS variable: the PEM certificate the
// host made for this start. plugin.Serve answers it with a certificate of
// its own in the handshake's sixth field and then accepts only TLS
// connections that present the host's certificate; every other
// connection to the plugin's socket (a neighbour plugin that found it in
// /proc/net/unix) is refused before any RPC.
const ClientCertEnv = "PLUGIN_CLIENT_CERT"

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

// checkHostAuth returns errNoClientCert when the host gave no client
// certificate.
func checkHostAuth() error {
	if os.Getenv(ClientCertEnv) == "" {
		return errNoClientCert
	}
	return nil
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
