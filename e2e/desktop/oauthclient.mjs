// The TypeScript SDK's OAuth client against an OAuth-protected /mcp, run by
// e2e/oidcclients_e2e_test.go:
//
//   node oauthclient.mjs code URL REDIRECT_URL TOOL ARGS_JSON
//   node oauthclient.mjs client_credentials URL ISSUER CLIENT_ID CLIENT_SECRET TOOL ARGS_JSON
//
// URL is the host's /mcp. "code": the authorization code flow with PKCE;
// the SDK discovers the host from its 401 (RFC 9728 metadata), then the
// authorization server (RFC 8414 / OpenID discovery), registers itself
// (RFC 7591) with REDIRECT_URL and asks to be sent to the authorization
// URL: this script prints "AUTHORIZE <url>" and reads the redirect back
// (the URL the browser landed on) as one line of stdin, the test playing
// the browser. "client_credentials": the SDK's ClientCredentialsProvider,
// unattended. Either way it then lists the tools and calls TOOL with
// ARGS_JSON, printing one line {"tools": [names...], "result": CallToolResult}.
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [mode, url, ...rest] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// An in-memory OAuthClientProvider for the authorization code flow.
class CodeProvider {
  constructor(redirectUrl) {
    this.redirectUrl = redirectUrl;
    this.clientMetadata = {
      client_name: 'opentool-host e2e (TypeScript SDK)',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  redirectToAuthorization(u) { process.stdout.write(`AUTHORIZE ${u.toString()}\n`); }
}

async function connect(provider) {
  const client = new Client({ name: 'opentool-e2e-oauth', version: '1.0.0' });
  let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || mode !== 'code') throw err;
  }
  const back = new URL((await lines.next()).value);
  if (back.searchParams.get('error')) throw new Error(`authorization failed: ${back.search}`);
  await transport.finishAuth(back.searchParams.get('code'));
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await client.connect(transport);
  return client;
}

let provider;
let tool;
let args;
if (mode === 'code') {
  const [redirectUrl] = rest;
  [, tool, args] = rest;
  provider = new CodeProvider(redirectUrl);
} else if (mode === 'client_credentials') {
  const [issuer, clientId, clientSecret] = rest;
  [, , , tool, args] = rest;
  provider = new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: issuer, scope: 'calc' });
} else {
  throw new Error(`mode ${mode}: want code or client_credentials`);
}
const client = await connect(provider);
const { tools } = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
process.stdout.write(`${JSON.stringify({ tools: tools.map((t) => t.name).sort(), result })}\n`);
await client.close();
process.exit(0);
