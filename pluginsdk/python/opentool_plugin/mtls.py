"""The plugin's side of go-plugin's AutoMTLS: the host proves itself.

The host (go-plugin's client with AutoMTLS) makes a self-signed certificate
for this start and passes it, PEM, in PLUGIN_CLIENT_CERT. The plugin makes
its own key and self-signed certificate (ECDSA P-256, the template
go-plugin's mtls.go uses: CN and DNS name "localhost", a CA, server and
client auth), serves gRPC over TLS that requires a client certificate
issued by exactly the host's, and tells the host its certificate in the
handshake line's 6th field (base64 without padding of the DER), which the
host then trusts alone. A neighbour plugin that finds the socket has
neither key: its connection is refused in the TLS handshake, before any
RPC.

Needs the cryptography package (Debian's python3-cryptography); serve()
imports this module only when it serves, so that --document does not.
"""

import base64
import datetime

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLIENT_CERT_ENV = "PLUGIN_CLIENT_CERT"
# How long the plugin's certificate is valid, as go-plugin's (262980 h, 30
# years): it lives as long as the process, whose key dies with it.
CERT_LIFETIME = datetime.timedelta(hours=262980)
# Tolerance for the host's clock, as go-plugin's.
CERT_BACKDATE = datetime.timedelta(seconds=30)

__all__ = ["CLIENT_CERT_ENV", "NoHostCertificate", "server_credentials"]


class NoHostCertificate(Exception):
    """The host passed no usable certificate in PLUGIN_CLIENT_CERT: the
    plugin must not serve (the message says why and what to do)."""


def _host_certificate(pem):
    """The host's certificate from pem (str): exactly one PEM CERTIFICATE
    block, parsed. Raises NoHostCertificate naming the fault."""
    if not pem.strip():
        raise NoHostCertificate(
            "%s is not set: this SDK serves only an opentool-host that authenticates itself "
            "with mTLS (go-plugin AutoMTLS); start the plugin with opentool-host of the release "
            "that requires opentool_plugin >= 0.3.0, or newer" % CLIENT_CERT_ENV)
    if pem.count("-----BEGIN CERTIFICATE-----") != 1:
        raise NoHostCertificate("%s must hold exactly one PEM certificate (the host's), it holds %d"
                                % (CLIENT_CERT_ENV, pem.count("-----BEGIN CERTIFICATE-----")))
    try:
        return x509.load_pem_x509_certificate(pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError) as e:
        raise NoHostCertificate("%s is not a PEM certificate: %s" % (CLIENT_CERT_ENV, e))


def _own_certificate():
    """A new ECDSA P-256 key and its self-signed certificate (go-plugin's
    template), as (key PEM bytes, certificate PEM bytes, certificate DER
    bytes)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CERT_BACKDATE)
            .not_valid_after(now + CERT_LIFETIME)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=True,
                data_encipherment=False, key_agreement=True, key_cert_sign=True, crl_sign=False,
                encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.DER)


def server_credentials(client_pem):
    """The gRPC server credentials that admit only the host, and the
    handshake line's 6th field, as (grpc.ServerCredentials, str).

    client_pem is PLUGIN_CLIENT_CERT's value (str). The credentials present
    a new self-signed certificate and require a client certificate that
    verifies against the host's alone; the field is that certificate, DER,
    base64 without padding (go-plugin's RawStdEncoding). Raises
    NoHostCertificate when client_pem is empty or not one PEM certificate.
    """
    host = _host_certificate(client_pem)
    key_pem, cert_pem, cert_der = _own_certificate()
    creds = grpc.ssl_server_credentials(
        [(key_pem, cert_pem)],
        root_certificates=host.public_bytes(serialization.Encoding.PEM),
        require_client_auth=True)
    return creds, base64.b64encode(cert_der).decode("ascii").rstrip("=")
