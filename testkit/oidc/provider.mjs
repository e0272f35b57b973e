// The OAuth 2.1 authorization server of opentool-host's tests: oidc-provider
// (a certified OpenID Provider) on 127.0.0.1, an ephemeral port.
//
// It prints its issuer URL (http://127.0.0.1:PORT) as the first line of
// stdout once it listens, and serves until SIGTERM (or until stdin closes,
// with OIDC_EXIT_WITH_STDIN=1).
//
// What it issues: JWT access tokens (RFC 9068, typ at+jwt, RS256) through
// the resourceIndicators feature (RFC 8707) for any resource
// http://127.0.0.1:PORT/mcp (or localhost / [::1]); aud is the resource, the
// resource's scopes are "calc notes admin", and a token carries a "groups"
// claim (["admin"] for the cc-admin client and for users whose login starts
// with "admin", else ["users"]).
//
// Clients (secrets are test values, not credentials):
//   cc-basic / cc-basic-secret   client_credentials, client_secret_basic
//   cc-post  / cc-post-secret    client_credentials, client_secret_post
//   cc-admin / cc-admin-secret   client_credentials, basic; groups ["admin"]
//   cc-expired / cc-expired-secret  client_credentials, basic; its tokens are
//       signed by the issuer's key but expired an hour ago (iat 2 h ago), for
//       the expiry tests (a 60 s clock skew makes a merely short-lived token
//       a minute-long wait)
//   cc-jwt  client_credentials, private_key_jwt (RFC 7523 section 2.2) with
//       the public keys of OIDC_CC_JWT_JWKS (a JWK Set, JSON); absent
//       without that variable
//   app  public (token_endpoint_auth_method none), authorization_code with
//       PKCE S256 and refresh_token, native, redirect http://127.0.0.1/callback
//       (any port, RFC 8252 section 7.3)
// Dynamic client registration (RFC 7591) is open at /reg, so that SDK
// clients register themselves. Logins are oidc-provider's devInteractions:
// /interaction/UID shows a login form (any login, any password), then a
// consent form (prompt=consent).
//
// OIDC_ACCESS_TOKEN_TTL sets the resource's access token lifetime in
// seconds (default 600).
//
// Admin: POST /admin/rotate with "Authorization: Bearer $OIDC_ADMIN_TOKEN"
// makes a new RS256 signing key, which signs every token from then on; the
// JWKS lists the new key first and keeps the previous one (so tokens already
// issued still verify). It answers {"kid": NEW}. POST /admin/default-resource
// with a resource URL as the body makes it the resource of token requests
// that name none. Without OIDC_ADMIN_TOKEN
// the admin routes answer 404.
import http from 'node:http';
import crypto from 'node:crypto';
import Provider, { errors } from 'oidc-provider';
import { generateKeyPair, exportJWK } from 'jose';

const RESOURCE = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):[0-9]{1,5}\/mcp$/;
const RESOURCE_SCOPES = 'calc notes admin';
const ADMIN_TOKEN = process.env.OIDC_ADMIN_TOKEN || '';
// The lifetime of the resource's access tokens in seconds
// (OIDC_ACCESS_TOKEN_TTL, default 600): a refresh test makes it short.
const ACCESS_TOKEN_TTL = Number(process.env.OIDC_ACCESS_TOKEN_TTL || 600);

async function newKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: crypto.randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

const ccClient = (id, method) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: method,
});

const clients = [
  ccClient('cc-basic', 'client_secret_basic'),
  ccClient('cc-post', 'client_secret_post'),
  ccClient('cc-admin', 'client_secret_basic'),
  ccClient('cc-expired', 'client_secret_basic'),
  ...(process.env.OIDC_CC_JWT_JWKS
    ? [{
      client_id: 'cc-jwt',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: JSON.parse(process.env.OIDC_CC_JWT_JWKS),
    }]
    : []),
  {
    client_id: 'app',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback'],
  },
];

function groupsOf(token) {
  if (token.clientId === 'cc-admin' || (token.accountId || '').startsWith('admin')) {
    return ['admin'];
  }
  return ['users'];
}

function configuration(keys) {
  return {
    clients,
    jwks: { keys },
    cookies: { keys: [crypto.randomBytes(16).toString('hex')] },
    // The resource's scopes too: a client registering itself names the
    // scopes it wants (the TypeScript SDK does, SEP-835), and registration
    // accepts only these.
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES.split(' ')],
    pkce: { required: () => true },
    ttl: { AccessToken: ACCESS_TOKEN_TTL, ClientCredentials: ACCESS_TOKEN_TTL },
    extraTokenClaims: async (_ctx, token) => ({ groups: groupsOf(token) }),
    formats: {
      customizers: {
        jwt: async (_ctx, token, jwt) => {
          if (token.clientId === 'cc-expired') {
            const now = Math.floor(Date.now() / 1000);
            jwt.payload.iat = now - 7200;
            jwt.payload.exp = now - 3600;
          }
        },
      },
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf || defaultResource,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (!RESOURCE.test(resource)) {
            throw new errors.InvalidTarget(`resource ${resource} is not http://127.0.0.1:PORT/mcp`);
          }
          return {
            scope: RESOURCE_SCOPES,
            audience: resource,
            accessTokenTTL: ACCESS_TOKEN_TTL,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  };
}

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

let keys = [await newKey()];
// The resource of a token request that names none (POST
// /admin/default-resource sets it): some clients send no resource parameter
// (RFC 8707) with the client credentials grant, as an authorization server
// with a default audience per client (Auth0, Entra) then serves them.
let defaultResource;
function start() {
  const p = new Provider(issuer, configuration(keys));
  p.on('server_error', (_ctx, err) => console.error('oidc-provider server_error:', err));
  return p.callback();
}
// The provider's handler; a rotation swaps it for one with the new keys.
// Grants, sessions and registered clients stay: the memory adapter's store
// is one per process.
let handle = start();

async function rotate(res) {
  keys = [await newKey(), keys[0]];
  handle = start();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kid: keys[0].kid }));
}

function admin(req, res) {
  const want = Buffer.from(`Bearer ${ADMIN_TOKEN}`);
  const got = Buffer.from(req.headers.authorization || '');
  if (!ADMIN_TOKEN || got.length !== want.length || !crypto.timingSafeEqual(got, want)) {
    res.writeHead(404).end();
    return;
  }
  if (req.method === 'POST' && req.url === '/admin/rotate') {
    rotate(res).catch((err) => { res.writeHead(500).end(String(err)); });
    return;
  }
  if (req.method === 'POST' && req.url === '/admin/default-resource') {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      if (!RESOURCE.test(body)) {
        res.writeHead(400).end(`not http://127.0.0.1:PORT/mcp: ${body}`);
        return;
      }
      defaultResource = body;
      res.writeHead(204).end();
    });
    return;
  }
  res.writeHead(404).end();
}

server.on('request', (req, res) => {
  if (req.url.startsWith('/admin/')) {
    admin(req, res);
    return;
  }
  handle(req, res);
});

process.stdout.write(`${issuer}\n`);
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
// OIDC_EXIT_WITH_STDIN=1 (testkit/oidcprovider sets it): also stop when
// stdin closes, so that a test killed outright leaves no provider behind.
if (process.env.OIDC_EXIT_WITH_STDIN === '1') {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
