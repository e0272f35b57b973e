'use strict';
// Tests of the Node SDK with node's own runner (node --test test/; the Go
// test TestNodeSDKUnitTests runs them in make test). The protocol tests
// start the example plugin as the host would (magic cookie, socket dir, its
// certificate for AutoMTLS), read the handshake line and talk gRPC over
// mTLS to it with @grpc/grpc-js.

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { test } = require('node:test');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const sdk = require('..');
const mtls = require('../lib/mtls');
const { Toolkit, ToolError, Context, Result, text, image, audio, resourceLink, embeddedResource } = sdk;

const SDK = path.join(__dirname, '..');
const EXAMPLE = path.join(SDK, '..', '..', 'plugins', 'opentool-plugin-nodeecho');

test('Toolkit builds the OpenTool 1.1.0 document', () => {
  const tk = new Toolkit({ title: 't', version: '1.2.3', description: 'd' });
  tk.function('f', {
    description: 'F.',
    parameters: { a: { type: 'object', description: 'A.', required: true }, b: { type: 'array', items: { type: 'string' } } },
    returns: { type: 'object' },
  }, async () => ({}));
  tk.stream('s', { description: 'S.' }, async function* () {});
  const doc = tk.document();
  assert.equal(doc.opentool, '1.1.0');
  assert.deepEqual(doc.info, { title: 't', version: '1.2.3', description: 'd' });
  const [f, s] = doc.functions;
  // A parameter's object schemas refuse undeclared members unless they say
  // additionalProperties: true (the SDKs' shared strictness).
  assert.deepEqual(f.parameters[0], { name: 'a', description: 'A.', schema: { type: 'object', properties: {}, additionalProperties: false }, required: true });
  assert.deepEqual(f.parameters[1], { name: 'b', schema: { type: 'array', items: { type: 'string' } }, required: false });
  assert.equal(f.additionalParameters, false);
  assert.deepEqual(f.return, { name: 'result', schema: { type: 'object', properties: {} } });
  assert.deepEqual(s.stream, { data: { name: 'item', schema: { type: 'object', properties: {} } } });
});

test('Toolkit takes Parameter Objects and an object schema\'s required members', () => {
  const tk = new Toolkit({ title: 't', version: '1' });
  const point = { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x'] };
  tk.function('f', {
    description: 'F.',
    parameters: {
      p: { schema: point, required: true, description: 'P.' },
      q: point,
      m: { type: 'object', additionalProperties: true, required: false },
    },
  }, async () => ({}));
  const [p, q, m] = tk.document().functions[0].parameters;
  assert.deepEqual(p, { name: 'p', description: 'P.', schema: { ...point, additionalProperties: false }, required: true });
  assert.deepEqual(q, { name: 'q', schema: { ...point, additionalProperties: false }, required: false });
  assert.deepEqual(m, { name: 'm', schema: { type: 'object', properties: {}, additionalProperties: true }, required: false });
  assert.throws(() => tk.function('g', { description: 'x', parameters: { p: { schema: point, type: 'x' } } }, async () => ({})), /parameter p: a parameter given with schema takes only/);
  assert.throws(() => tk.function('g', { description: 'x', parameters: { p: { type: 'object', additionalProperties: {} } } }, async () => ({})), /additionalProperties must be true or false/);
});

test('argumentsOf checks and converts as the other SDKs do', () => {
  const { argumentsOf } = require('../lib/strict');
  const tk = new Toolkit({ title: 't', version: '1' });
  tk.function('f', {
    description: 'F.',
    parameters: { n: { type: 'integer', required: true }, meta: { type: 'object', additionalProperties: true } },
  }, async () => ({}));
  const f = tk.get('f');
  const args = (s) => argumentsOf(f, Buffer.from(s));
  assert.deepEqual(args('{"n": 2.50e1}'), { n: 25 });
  assert.ok(Object.is(args('{"n": -0.0}').n, 0));
  const got = args('{"n": 1, "meta": {"__proto__": {"x": 1}}}');
  assert.equal(Object.getPrototypeOf(got.meta), Object.prototype);
  assert.deepEqual(Object.keys(got.meta), ['__proto__']);
  assert.equal(JSON.stringify(got), '{"n":1,"meta":{"__proto__":{"x":1}}}');
  assert.throws(() => args('{"n": 1, "meta": {"a": 1, "a": 1}}'), /meta: duplicate member "a"/);
  assert.throws(() => args('{"n": 9007199254740992}'), /out of range/);
  assert.throws(() => args('{"n": 1e999999999999}'), /out of range/);
  assert.throws(() => args('{"n": 1, "N": 2}'), /unknown field "N".*case-sensitive: the parameter is "n"/);
  assert.throws(() => args('['.repeat(200000)), (e) => e.code === 400);
});

test('Toolkit refuses bad declarations, naming where', () => {
  const tk = new Toolkit({ title: 't', version: '1' });
  const fn = async () => ({});
  assert.throws(() => tk.function('bad name', { description: 'x' }, fn), /does not match/);
  assert.throws(() => tk.function('f', {}, fn), /needs a description/);
  assert.throws(() => tk.function('f', { description: 'x', parameters: { p: { type: 'text' } } }, fn), /function f: parameter p: schema type must be/);
  assert.throws(() => tk.function('f', { description: 'x', parameters: { p: { type: 'array' } } }, fn), /parameter p: an array schema needs items/);
  assert.throws(() => tk.function('f', { description: 'x', returns: { type: 'object', properties: { q: 1 } } }, fn), /returns\.properties\.q: a schema must be an object/);
  tk.function('f', { description: 'x' }, fn);
  assert.throws(() => tk.function('f', { description: 'x' }, fn), /defined twice/);
  assert.throws(() => new Toolkit({ title: 't' }), /title and a version/);
  assert.equal(new ToolError(404, 'nope').code, 404);
});

test('content blocks and Result: the MCP shapes, and the projection OpenTool callers get', () => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
  assert.deepEqual(text('hi'), { type: 'text', text: 'hi' });
  assert.deepEqual(text('hi', { annotations: { audience: ['user'] }, meta: { k: 1 } }),
    { type: 'text', text: 'hi', annotations: { audience: ['user'] }, _meta: { k: 1 } });
  assert.deepEqual(image(png, 'image/png'), { type: 'image', data: 'iVBORw==', mimeType: 'image/png' });
  assert.deepEqual(image(new Uint8Array([1, 2, 3]), 'image/gif').data, 'AQID');
  assert.deepEqual(image('iVBORw==', 'image/png').data, 'iVBORw==');
  assert.deepEqual(audio(png, 'audio/wav'), { type: 'audio', data: 'iVBORw==', mimeType: 'audio/wav' });
  assert.deepEqual(resourceLink({ uri: 'file:///a', name: 'a', mimeType: 'text/plain' }),
    { type: 'resource_link', uri: 'file:///a', name: 'a', mimeType: 'text/plain' });
  assert.deepEqual(embeddedResource({ uri: 'file:///a', text: 'A', mimeType: 'text/plain' }),
    { type: 'resource', resource: { uri: 'file:///a', mimeType: 'text/plain', text: 'A' } });
  assert.deepEqual(embeddedResource({ uri: 'file:///b', blob: png }), { type: 'resource', resource: { uri: 'file:///b', blob: 'iVBORw==' } });
  assert.throws(() => image('not base64!', 'image/png'), /standard base64/);
  assert.throws(() => image(png), /mimeType must be/);
  assert.throws(() => image(42, 'image/png'), /must be a Buffer/);
  assert.throws(() => embeddedResource({ uri: 'x' }), /exactly one of text and blob/);
  assert.throws(() => new Result({ content: [{ type: 'video' }] }), /content\[0\] is not a content block/);

  const r = new Result({ content: ['a', image(png, 'image/png'), text('b')] });
  assert.deepEqual(JSON.parse(JSON.stringify(r)), { content: [{ type: 'text', text: 'a' }, { type: 'image', data: 'iVBORw==', mimeType: 'image/png' }, { type: 'text', text: 'b' }] });
  assert.deepEqual(r.project(), { content: r.content, text: 'a\nb' });
  assert.deepEqual(new Result().project(), { content: [], text: '' });
  assert.deepEqual(new Result({ structuredContent: { n: 1 }, content: ['{"n":1}'] }).project(), { n: 1 });
  assert.deepEqual(new Result({ structuredContent: [1, 2] }).project(), { result: [1, 2] });
  assert.deepEqual(JSON.parse(JSON.stringify(new Result({ content: 'no', isError: true, meta: { m: true } }))),
    { content: [{ type: 'text', text: 'no' }], isError: true, _meta: { m: true } });
  assert.throws(() => new Result({ content: ['no', 'way'], isError: true }).project(), (e) => e instanceof ToolError && e.code === 500 && e.message === 'no\nway');
  assert.throws(() => new Result({ isError: true }).project(), (e) => e.message === 'the MCP tool reported an error without text');
});

test('Context.progress and log: MCP params, only with a progress token, nothing without a peer', () => {
  const sent = [];
  const peer = { notify: (method, params) => sent.push([method, params]) > 0 };
  const ctx = new Context('f', '', { progressToken: 'tok' }, peer);
  assert.equal(ctx.progress(1, 4, 'one'), true);
  assert.equal(ctx.progress(2), true);
  assert.equal(ctx.log('warning', { disk: 'full' }, 'fs'), true);
  assert.equal(ctx.log('debug', 'x'), true);
  assert.deepEqual(sent, [
    ['notifications/progress', { progressToken: 'tok', progress: 1, total: 4, message: 'one' }],
    ['notifications/progress', { progressToken: 'tok', progress: 2 }],
    ['notifications/message', { level: 'warning', logger: 'fs', data: { disk: 'full' } }],
    ['notifications/message', { level: 'debug', data: 'x' }],
  ]);
  assert.throws(() => ctx.log('verbose', 'x'), /not one of MCP's/);
  assert.throws(() => ctx.progress('1'), /finite number/);
  assert.throws(() => ctx.progress(1, Infinity), /finite number/);
  assert.throws(() => ctx.notify('x', [1]), /params must be an object/);
  sent.length = 0;
  const noToken = new Context('f', '', {}, peer);
  assert.equal(noToken.progress(1, 2), false, 'no progress token: no progress');
  assert.equal(noToken.log('info', 'still logged'), true);
  assert.equal(sent.length, 1);
  const alone = new Context('f', '', { progressToken: 1 });
  assert.equal(alone.progress(1), false);
  assert.equal(alone.log('info', 'x'), false);
  assert.deepEqual(new Context('f').meta, {});
});

test('requests to the client: the reply settles them, cancel and protocol 2 fail them', async () => {
  const { Peer } = require('../lib/server');
  const written = [];
  const stream = { write: (ev) => written.push(ev) };
  const peer = new Peer(stream, true);
  const ctx = new Context('f', '', {}, peer);
  ctx.signal.addEventListener('abort', () => peer.close(), { once: true });
  const roots = ctx.listRoots();
  assert.deepEqual([written[0].message.id, written[0].message.method, JSON.parse(written[0].message.params)], [1, 'roots/list', {}]);
  assert.equal(peer.deliver({ id: 7 }), false, 'a reply to a request never sent');
  assert.equal(peer.deliver({ id: 1, result: Buffer.from('{"roots":[{"uri":"file:///r"}]}'), error: null }), true);
  assert.deepEqual(await roots, { roots: [{ uri: 'file:///r' }] });
  assert.equal(peer.deliver({ id: 1 }), true, 'a late reply is dropped');
  const refused = ctx.elicit('q', {});
  peer.deliver({ id: 2, error: { code: -32601, message: 'no', data: Buffer.from('{"why":1}') } });
  await assert.rejects(refused, (e) => e instanceof sdk.RPCError && e.code === -32601 && e.message === 'no' && e.data.why === 1);
  // sampling/createMessage's params; cancel fails the request waiting.
  const sampled = ctx.createMessage({ messages: ['hi'], maxTokens: 10 });
  assert.deepEqual(JSON.parse(written[2].message.params), { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 });
  ctx.cancel();
  await assert.rejects(sampled, (e) => e.code === -32601 && /ended before the answer/.test(e.message));
  await assert.rejects(ctx.listRoots(), /the call is over/);
  // A host of protocol 2, or no peer: nobody can answer.
  await assert.rejects(new Context('f', '', {}, new Peer(stream, false)).elicit('q', {}), /plugin protocol 2/);
  await assert.rejects(new Context('f').listRoots(), (e) => e.code === -32601);
});

test('negotiate answers the highest version both sides speak, as go-plugin', () => {
  const { negotiate } = require('../lib/server');
  assert.deepEqual(sdk.PROTOCOL_VERSIONS, [2, 3]);
  assert.equal(negotiate('2,3'), 3);
  assert.equal(negotiate('3, 2'), 3);
  assert.equal(negotiate('2'), 2);
  assert.equal(negotiate('3'), 3);
  assert.equal(negotiate(''), 2);
});

test('Context.sleep ends early, true, when the call is cancelled', async () => {
  const ctx = new Context('f');
  assert.equal(await ctx.sleep(1), false);
  const t0 = Date.now();
  setTimeout(() => ctx.cancel(), 20);
  assert.equal(await ctx.sleep(10000), true);
  assert.ok(Date.now() - t0 < 5000);
  assert.equal(ctx.cancelled, true);
  assert.equal(ctx.signal.aborted, true);
  assert.equal(await ctx.sleep(10000), true);
});

test('PLUGIN_CLIENT_CERT must be exactly one PEM certificate', () => {
  const { cert } = mtls.ownCertificate();
  for (const [value, want] of [
    ['', /is not set/],
    ['hello', /exactly one/],
    [cert + cert, /exactly one/],
    ['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', /not a PEM certificate/],
  ]) {
    assert.throws(() => mtls.hostCertificate(value), (e) => e instanceof mtls.NoHostCertificate && want.test(e.message));
  }
  assert.equal(mtls.hostCertificate(cert), new crypto.X509Certificate(cert).toString());
});

test("the plugin's certificate follows go-plugin's template", () => {
  const { der } = mtls.ownCertificate();
  const x = new crypto.X509Certificate(der);
  assert.equal(x.ca, true);
  assert.equal(x.subject, 'CN=localhost');
  assert.equal(x.subjectAltName, 'DNS:localhost');
  assert.equal(x.publicKey.asymmetricKeyDetails.namedCurve, 'prime256v1');
  assert.deepEqual(x.keyUsage.sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  assert.ok(x.verify(x.publicKey));
  assert.ok(new Date(x.validTo) > new Date(Date.now() + 29 * 365 * 86400e3), 'valid 30 years, as go-plugin\'s');
});

// startExample runs the example as the host would (its own process group),
// offering the application protocol versions `versions`
// (PLUGIN_PROTOCOL_VERSIONS), and resolves to {proc, client (Tool), health,
// controller, sockDir} once it printed its handshake, which must name
// version `want`. The group also holds a `sleep` started before the plugin
// (its pid in sockDir/child), as a process the plugin started.
async function startExample(t, versions = '2', want = '2') {
  const sockDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-test-'));
  const host = mtls.ownCertificate(); // as go-plugin's AutoMTLS makes the host's
  const script = 'sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$DIR/child"; exec "$NODE" "$EXAMPLE"';
  const proc = spawn('/bin/sh', ['-c', script], {
    env: {
      PATH: process.env.PATH,
      DIR: sockDir,
      NODE: process.execPath,
      EXAMPLE,
      OPENTOOL_PLUGIN: '4c6d2b0a-opentool-host-plugin',
      PLUGIN_PROTOCOL_VERSIONS: versions,
      PLUGIN_UNIX_SOCKET_DIR: sockDir,
      OPENTOOL_NODEECHO_SDK: SDK,
      PLUGIN_CLIENT_CERT: host.cert,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  t.after(() => {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    fs.rmSync(sockDir, { recursive: true, force: true });
  });
  let stderr = '';
  proc.stderr.on('data', (b) => { stderr += b; });
  const line = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout });
    rl.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`plugin exited ${code} before its handshake: ${stderr}`)));
  });
  const [core, app, net, addr, proto, cert, ...rest] = line.split('|');
  assert.deepEqual([core, app, net, proto, rest], ['1', want, 'unix', 'grpc', []]);
  // The 6th field: the plugin's certificate, DER, base64 without padding
  // (go-plugin's RawStdEncoding), for "localhost".
  assert.ok(!cert.includes('='), 'no padding');
  const pluginCert = new crypto.X509Certificate(Buffer.from(cert, 'base64'));
  assert.equal(pluginCert.checkHost('localhost'), 'localhost');
  assert.ok(addr.startsWith(sockDir + path.sep), `socket ${addr} is in PLUGIN_UNIX_SOCKET_DIR`);
  const dir = path.join(SDK, 'proto');
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(
    ['tool.proto', 'health.proto', 'grpc_controller.proto'].map((f) => path.join(dir, f)),
    { keepCase: true, oneofs: true, defaults: true, includeDirs: [dir] },
  ));
  const creds = grpc.credentials.createSsl(Buffer.from(pluginCert.toString()), Buffer.from(host.key), Buffer.from(host.cert));
  const target = `unix:${addr}`;
  const opts = { 'grpc.ssl_target_name_override': 'localhost' };
  const client = new pkg.opentool.plugin.v2.Tool(target, creds, opts);
  const health = new pkg.grpc.health.v1.Health(target, creds, opts);
  const controller = new pkg.plugin.GRPCController(target, creds, opts);
  t.after(() => [client, health, controller].forEach((c) => c.close()));
  return { proc, client, health, controller, sockDir };
}

// invoke sends the given requests on one Invoke stream and resolves to the
// events and the final status.
function invoke(client, requests) {
  return new Promise((resolve) => {
    const events = [];
    const call = client.Invoke();
    call.on('data', (ev) => events.push(ev));
    call.on('error', (err) => resolve({ events, status: err.code, details: err.details }));
    call.on('end', () => resolve({ events, status: grpc.status.OK }));
    for (const r of requests) call.write(r);
    call.end();
  });
}

const unary = (client, method, ...args) => new Promise((resolve, reject) => {
  client[method](...args, (err, res) => (err ? reject(err) : resolve(res)));
});

test('the example speaks the plugin protocol', async (t) => {
  const { proc, client, health, controller } = await startExample(t);

  const h = await unary(health, 'Check', { service: 'plugin' });
  assert.equal(h.status, 1); // SERVING
  await assert.rejects(unary(health, 'Check', { service: 'other' }), { code: grpc.status.NOT_FOUND });

  await assert.rejects(unary(client, 'Catalog', {}), { code: grpc.status.UNIMPLEMENTED });
  await assert.rejects(unary(client, 'Request', { method: 'prompts/get' }), { code: grpc.status.UNIMPLEMENTED });
  const load = await unary(client, 'Load', {});
  const doc = JSON.parse(load.document.toString('utf8'));
  assert.deepEqual(doc.functions.map((f) => f.name), ['echo', 'sum_numbers', 'ticks', 'sleep', 'fail', 'stats', 'trace', 'pid', 'picture', 'steps', 'confirm']);

  const call = (name, args, stream = false) => ({
    call: { name, arguments: Buffer.from(args === undefined ? '' : JSON.stringify(args)), stream },
  });
  let r = await invoke(client, [call('echo', { text: 'hé' })]);
  assert.equal(r.status, grpc.status.OK);
  assert.deepEqual(JSON.parse(r.events[0].data), { echo: 'hé', version: '1.0.0' });

  r = await invoke(client, [call('ticks', { n: 3 }, true)]);
  assert.deepEqual(r.events.map((e) => JSON.parse(e.data)), [{ i: 1 }, { i: 2 }, { i: 3 }]);

  const errorOf = async (req) => {
    const res = await invoke(client, [req]);
    assert.equal(res.events.length, 1, JSON.stringify(res));
    return res.events[0].error;
  };
  assert.deepEqual(await errorOf(call('nope', {})), { code: 404, message: 'function "nope" not found' });
  assert.equal((await errorOf(call('ticks', { n: 1 }, false))).code, 404);
  assert.equal((await errorOf(call('echo', { text: 'x' }, true))).code, 404);
  assert.match((await errorOf({ call: { name: 'echo', arguments: Buffer.from('[1]') } })).message, /must be a JSON object, got array/);
  assert.match((await errorOf({ call: { name: 'echo', arguments: Buffer.from('{') } })).message, /arguments are not valid JSON/);
  assert.match((await errorOf({ call: { name: 'echo', arguments: Buffer.from('{"text":"a","text":"b"}') } })).message, /duplicate parameter "text"/);
  assert.match((await errorOf({ call: { name: 'echo', arguments: Buffer.from('{"text":1}') } })).message, /parameter "text": want string, got number/);
  assert.deepEqual(await errorOf(call('fail', { message: 'kaputt' })), { code: 500, message: 'kaputt' });
  assert.deepEqual(await errorOf(call('sum_numbers', { values: [] })), { code: 400, message: 'values must not be empty' });

  r = await invoke(client, [{ cancel: {} }]);
  assert.equal(r.status, grpc.status.INVALID_ARGUMENT);
  assert.match(r.details, /first message of Invoke must be a call/);

  // Cancel on the call's stream ends the function's context.
  r = await invoke(client, [call('sleep', { ms: 20000 }), { cancel: {} }]);
  assert.deepEqual(r.events[0].error, { code: 499, message: 'cancelled' });

  // Shutdown: the answer arrives, then the process exits 0.
  const exited = new Promise((resolve) => proc.once('exit', (code, sig) => resolve({ code, sig })));
  await unary(controller, 'Shutdown', {});
  assert.deepEqual(await exited, { code: 0, sig: null });
});

// events is what one call's stream carried, each event as
// [kind, JSON value] (messages as [method, params]).
const eventsOf = (r) => r.events.map((e) => {
  if (e.message) return [e.message.method, JSON.parse(e.message.params.toString('utf8') || 'null')];
  if (e.mcp_result && e.mcp_result.length) return ['mcp_result', JSON.parse(e.mcp_result)];
  if (e.error) return ['error', e.error];
  return ['data', JSON.parse(e.data)];
});

const DOT_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP438EAAAQRAYhPXesHAAAAAElFTkSuQmCC';

test('protocol 3: content blocks as an MCP result, progress and log messages before it', async (t) => {
  const { client } = await startExample(t, '2,3', '3');
  const call = (name, args, meta) => ({
    call: { name, arguments: Buffer.from(JSON.stringify(args)), meta: Buffer.from(meta ? JSON.stringify(meta) : '') },
  });
  let r = await invoke(client, [call('picture', { caption: 'a dot' })]);
  assert.equal(r.status, grpc.status.OK);
  assert.deepEqual(eventsOf(r), [['mcp_result', { content: [{ type: 'text', text: 'a dot' }, { type: 'image', data: DOT_PNG, mimeType: 'image/png' }] }]]);

  // With a progress token: each step's log message and progress (the
  // caller's token), in order, then the result.
  r = await invoke(client, [call('steps', { n: 2 }, { progressToken: 'p1' })]);
  assert.deepEqual(eventsOf(r), [
    ['notifications/message', { level: 'info', logger: 'steps', data: 'step 1 of 2' }],
    ['notifications/progress', { progressToken: 'p1', progress: 1, total: 2, message: 'step 1 of 2' }],
    ['notifications/message', { level: 'info', logger: 'steps', data: 'step 2 of 2' }],
    ['notifications/progress', { progressToken: 'p1', progress: 2, total: 2, message: 'step 2 of 2' }],
    ['data', { steps: 2, reported: 2 }],
  ]);
  // Without one: log messages only.
  r = await invoke(client, [call('steps', { n: 1 })]);
  assert.deepEqual(eventsOf(r), [
    ['notifications/message', { level: 'info', logger: 'steps', data: 'step 1 of 1' }],
    ['data', { steps: 1, reported: 0 }],
  ]);
  // A stream's items stay data events.
  r = await invoke(client, [{ call: { name: 'ticks', arguments: Buffer.from('{"n":2}'), stream: true } }]);
  assert.deepEqual(eventsOf(r), [['data', { i: 1 }], ['data', { i: 2 }]]);
});

// converse runs one call of confirm as a host would: each request the
// plugin sends is answered with reply(message) (unless it returns
// undefined: then the call is cancelled), and resolves to the events.
function converse(client, question, reply) {
  return new Promise((resolve) => {
    const events = [];
    const call = client.Invoke();
    call.on('data', (ev) => {
      events.push(ev);
      if (ev.message && Number(ev.message.id) > 0) {
        const r = reply(ev.message);
        call.write(r === undefined ? { cancel: {} } : { reply: r });
      }
    });
    call.on('error', (err) => resolve({ events, status: err.code }));
    call.on('end', () => {
      call.end();
      resolve({ events, status: grpc.status.OK });
    });
    call.write({ call: { name: 'confirm', arguments: Buffer.from(JSON.stringify({ question })) } });
  });
}

test('protocol 3: a request to the client (elicitation/create) and the reply', async (t) => {
  const { client } = await startExample(t, '2,3', '3');
  const json = (v) => Buffer.from(JSON.stringify(v));
  let r = await converse(client, 'sure?', (m) => {
    assert.equal(m.method, 'elicitation/create');
    assert.deepEqual(JSON.parse(m.params), { message: 'sure?', requestedSchema: { type: 'object', properties: { answer: { type: 'string' } } } });
    return { id: m.id, result: json({ action: 'accept', content: { answer: 'yes' } }) };
  });
  assert.deepEqual(eventsOf(r).slice(1), [['data', { action: 'accept', answer: 'yes' }]]);
  assert.equal(Number(r.events[0].message.id), 1);
  // The client's (or the host's) JSON-RPC error reaches the function.
  r = await converse(client, 'q', (m) => ({ id: m.id, error: { code: -32601, message: 'no client can answer', data: json({ why: 'test' }) } }));
  assert.deepEqual(eventsOf(r).slice(1), [['error', { code: 500, message: 'elicitation/create: no client can answer (JSON-RPC error -32601)' }]]);
  // Cancel while the function waits for the answer: the request fails and
  // the call ends.
  r = await converse(client, 'q', () => undefined);
  assert.equal(r.status, grpc.status.OK);
  assert.ok(r.events.length <= 2, JSON.stringify(eventsOf(r)));
});

test('protocol 2 (a host that offers only 2): the projection, no messages', async (t) => {
  const { client } = await startExample(t, '2', '2');
  const call = (name, args) => ({ call: { name, arguments: Buffer.from(JSON.stringify(args)) } });
  let r = await invoke(client, [call('picture', { caption: 'a dot' })]);
  const blocks = [{ type: 'text', text: 'a dot' }, { type: 'image', data: DOT_PNG, mimeType: 'image/png' }];
  assert.deepEqual(eventsOf(r), [['data', { content: blocks, text: 'a dot' }]]);
  r = await invoke(client, [{ call: { name: 'steps', arguments: Buffer.from('{"n":2}'), meta: Buffer.from('{"progressToken":1}') } }]);
  assert.deepEqual(eventsOf(r), [['data', { steps: 2, reported: 0 }]]);
  r = await invoke(client, [call('confirm', { question: 'q' })]);
  assert.deepEqual(eventsOf(r), [['error', { code: 500, message: 'elicitation/create: no caller can answer this request: the host speaks plugin protocol 2 (JSON-RPC error -32601)' }]]);
});

test('the example refuses to run without the magic cookie, and prints its document', async () => {
  const run = (args, env) => new Promise((resolve) => {
    const p = spawn(process.execPath, [EXAMPLE, ...args], { env: { PATH: process.env.PATH, OPENTOOL_NODEECHO_SDK: SDK, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (b) => { out += b; });
    p.stderr.on('data', (b) => { err += b; });
    p.on('close', (code) => resolve({ code, out, err }));
  });
  let r = await run([], {});
  assert.equal(r.code, 1);
  assert.equal(r.out, '');
  assert.match(r.err, /This binary is a plugin/);
  r = await run(['--document'], {});
  assert.equal(r.code, 0);
  assert.equal(JSON.parse(r.out).info.title, 'nodeecho');
});

// alive: pid runs (a zombie, waiting for a parent to reap it, does not).
const alive = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
};

test('SIGTERM kills the plugin and the processes of its group', async (t) => {
  const { proc, sockDir } = await startExample(t);
  const child = Number(fs.readFileSync(path.join(sockDir, 'child'), 'utf8'));
  assert.ok(alive(child), 'the sleep runs');
  const exited = new Promise((resolve) => proc.once('exit', (code, sig) => resolve({ code, sig })));
  proc.kill('SIGTERM');
  // The plugin SIGKILLs its whole group, itself included.
  assert.deepEqual(await exited, { code: null, sig: 'SIGKILL' });
  for (let i = 0; i < 100 && alive(child); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(!alive(child), `the sleep (pid ${child}) outlived the plugin's SIGTERM`);
  assert.deepEqual(fs.readdirSync(sockDir).filter((f) => f.endsWith('.sock')), [], 'the socket is removed');
});
