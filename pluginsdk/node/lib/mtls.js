'use strict';
// The plugin's side of go-plugin's AutoMTLS: the host proves itself.
//
// The host (go-plugin's client with AutoMTLS) makes a self-signed
// certificate for this start and passes it, PEM, in PLUGIN_CLIENT_CERT. The
// plugin makes its own key and self-signed certificate (ECDSA P-256, the
// template go-plugin's mtls.go uses: CN and DNS name "localhost", a CA,
// server and client auth), serves TLS that requires a client certificate
// issued by exactly the host's, and tells the host its certificate in the
// handshake line's 6th field (base64 without padding of the DER), which the
// host then trusts alone. A neighbour plugin that finds the socket has
// neither key: its connection is refused in the TLS handshake, before any
// RPC, and the refusal is logged.
//
// The certificate is DER written here from a fixed template and signed by
// node:crypto (Node 20 cannot make certificates): about 3 ms, where
// requiring an X.509 library costs 30-150 ms of every start
// (@peculiar/x509, jsrsasign); Node's own X509Certificate parser checks the
// result before it is used.

const crypto = require('node:crypto');
const tls = require('node:tls');

const CLIENT_CERT_ENV = 'PLUGIN_CLIENT_CERT';
// How long the plugin's certificate is valid, as go-plugin's (262980 h,
// 30 years): it lives as long as the process, whose key dies with it.
const CERT_LIFETIME_MS = 262980 * 3600 * 1000;
const CERT_BACKDATE_MS = 30 * 1000; // tolerance for the host's clock, as go-plugin's
// A connection must finish its TLS handshake within this (ms); the host's
// does at once.
const HANDSHAKE_TIMEOUT_MS = 10 * 1000;
// At most one line about refused connections per this (ms): a neighbour
// knocking in a loop must not flood the host's log.
const REFUSAL_LOG_INTERVAL_MS = 1000;

/** The host passed no usable certificate in PLUGIN_CLIENT_CERT: the plugin must not serve. */
class NoHostCertificate extends Error {}

// DER: tag, definite length, contents.
function der(tag, ...parts) {
  const body = Buffer.concat(parts);
  let len;
  if (body.length < 0x80) {
    len = Buffer.from([body.length]);
  } else {
    const n = [];
    for (let l = body.length; l > 0; l = Math.floor(l / 256)) n.unshift(l % 256);
    len = Buffer.from([0x80 | n.length, ...n]);
  }
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...parts) => der(0x30, ...parts);
const oid = (hex) => der(0x06, Buffer.from(hex, 'hex')); // the OID's encoded arcs
const OID = {
  ecdsaWithSHA256: oid('2a8648ce3d040302'), // 1.2.840.10045.4.3.2
  commonName: oid('550403'), // 2.5.4.3
  keyUsage: oid('551d0f'), // 2.5.29.15
  subjectAltName: oid('551d11'), // 2.5.29.17
  basicConstraints: oid('551d13'), // 2.5.29.19
  extKeyUsage: oid('551d25'), // 2.5.29.37
  serverAuth: oid('2b06010505070301'), // 1.3.6.1.5.5.7.3.1
  clientAuth: oid('2b06010505070302'), // 1.3.6.1.5.5.7.3.2
};
const TRUE = Buffer.from('0101ff', 'hex');

// An X.509 time: UTCTime before 2050, GeneralizedTime from then (RFC 5280 4.1.2.5).
function time(d) {
  const s = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(s.slice(2))) : der(0x18, Buffer.from(s));
}

function extension(id, critical, value) {
  return seq(id, ...(critical ? [TRUE] : []), der(0x04, value));
}

/**
 * A new ECDSA P-256 key and its self-signed certificate (go-plugin's
 * template), as {key: PEM string, cert: PEM string, der: Buffer}.
 */
function ownCertificate(now = Date.now()) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = crypto.randomBytes(16);
  serial[0] = (serial[0] & 0x3f) | 0x40; // positive, minimal: 127 random bits
  const name = seq(der(0x31, seq(OID.commonName, der(0x0c, Buffer.from('localhost')))));
  const alg = seq(OID.ecdsaWithSHA256);
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))), // v3
    der(0x02, serial),
    alg,
    name,
    seq(time(new Date(now - CERT_BACKDATE_MS)), time(new Date(now + CERT_LIFETIME_MS))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, seq(
      extension(OID.subjectAltName, false, seq(der(0x82, Buffer.from('localhost')))),
      extension(OID.basicConstraints, true, seq(TRUE)),
      // digitalSignature, keyEncipherment, keyAgreement, keyCertSign: bits 0, 2, 4, 5
      extension(OID.keyUsage, true, der(0x03, Buffer.from([2, 0xac]))),
      extension(OID.extKeyUsage, false, seq(OID.serverAuth, OID.clientAuth)),
    )),
  );
  const cert = seq(tbs, alg, der(0x03, Buffer.from([0]), crypto.sign('sha256', tbs, privateKey)));
  const x = new crypto.X509Certificate(cert);
  if (!x.ca || !x.verify(publicKey) || x.checkHost('localhost') !== 'localhost') {
    throw new Error('the plugin certificate this SDK made does not check out'); // a bug here, never input
  }
  return { key: privateKey.export({ type: 'pkcs8', format: 'pem' }), cert: x.toString(), der: cert };
}

/**
 * The host's certificate from pem (PLUGIN_CLIENT_CERT's value): exactly one
 * PEM certificate, returned as PEM. Throws NoHostCertificate naming the
 * fault (empty: the host does not authenticate itself).
 * @param {string} pem
 */
function hostCertificate(pem) {
  if (!pem || !pem.trim()) {
    throw new NoHostCertificate(`${CLIENT_CERT_ENV} is not set: this SDK serves only an opentool-host that authenticates itself `
      + 'with mTLS (go-plugin AutoMTLS); start the plugin with opentool-host of the release that requires '
      + 'opentool-plugin >= 1.1.0, or newer');
  }
  const n = pem.split('-----BEGIN CERTIFICATE-----').length - 1;
  if (n !== 1) throw new NoHostCertificate(`${CLIENT_CERT_ENV} must hold exactly one PEM certificate (the host's), it holds ${n}`);
  try {
    return new crypto.X509Certificate(pem).toString();
  } catch (e) {
    throw new NoHostCertificate(`${CLIENT_CERT_ENV} is not a PEM certificate: ${e.message}`);
  }
}

// refusalLogger returns the 'tlsClientError' handler: one WARN line per
// refused connection, at most one per REFUSAL_LOG_INTERVAL_MS; the next
// line counts those left out.
function refusalLogger(log) {
  let last = -Infinity;
  let skipped = 0;
  return (err) => {
    const now = Date.now();
    if (now - last < REFUSAL_LOG_INTERVAL_MS) {
      skipped++;
      return;
    }
    last = now;
    const more = skipped ? ` (and ${skipped} more since the last such line)` : '';
    skipped = 0;
    log('WARN', `refused a connection that did not authenticate as the host: ${(err && (err.code || err.message)) || err}${more}`);
  };
}

/**
 * A TLS server that admits only the host, and the handshake line's 6th
 * field: {server: tls.Server, field: string}. Each authenticated
 * connection goes to onConnection (the gRPC server's connection
 * injector); a refused one is logged through log(level, msg). pem is
 * PLUGIN_CLIENT_CERT's value; throws NoHostCertificate when it is empty or
 * not one PEM certificate. The field is the plugin's certificate, DER,
 * base64 without padding (go-plugin's RawStdEncoding).
 * @param {string} pem
 * @param {(socket: tls.TLSSocket) => void} onConnection
 * @param {(level: string, msg: string) => void} log
 */
function hostOnlyServer(pem, onConnection, log) {
  const host = hostCertificate(pem);
  const own = ownCertificate();
  const server = tls.createServer({
    key: own.key,
    cert: own.cert,
    ca: [host],
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ['h2'],
    minVersion: 'TLSv1.2',
    handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
  });
  server.on('secureConnection', onConnection);
  server.on('tlsClientError', refusalLogger(log));
  return { server, field: own.der.toString('base64').replace(/=+$/, '') };
}

module.exports = { hostOnlyServer, hostCertificate, ownCertificate, NoHostCertificate, CLIENT_CERT_ENV };
