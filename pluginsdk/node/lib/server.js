'use strict';
// serve(): run a Toolkit as an opentool-host plugin.
//
// The wire is hashicorp/go-plugin's gRPC protocol with the application
// service opentool.plugin.v2.Tool (docs/plugin-protocol.md). This module
// mirrors the Go SDK (pluginsdk/serve.go, server.go, mcp.go, guard_unix.go)
// and the Python SDK: the host authenticated with go-plugin's AutoMTLS
// (mtls.js), the handshake on stdout, Health, Tool (Load, Invoke,
// Watch), go-plugin's GRPCController and GRPCStdio, SIGTERM and parent
// death ending the whole process group.
//
// Plugin protocol 3 (section 5b) when the host offers it, else 2, as
// go-plugin negotiates: under 3 a unary function's Result travels as an MCP
// result (InvokeEvent.mcp_result) and the call's messages (ctx.progress,
// ctx.log) as InvokeEvent.message, on the call's own stream and in the
// order they were made; under 2 a Result travels as its projection and
// messages are dropped.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { Context, ToolError, RPCError } = require('./toolkit');
const { isResult } = require('./content');
const { argumentsOf } = require('./strict');
const mtls = require('./mtls');

const MAGIC_COOKIE_KEY = 'OPENTOOL_PLUGIN';
const MAGIC_COOKIE_VALUE = '4c6d2b0a-opentool-host-plugin';
const CORE_PROTOCOL_VERSION = 1; // go-plugin's
// The application protocol versions this SDK speaks (tool.proto: 2, the
// Invoke stream; 3, 2 plus MCP results and a call's messages), oldest
// first, and the newest. serve() answers the highest the host offers in
// PLUGIN_PROTOCOL_VERSIONS, as go-plugin does.
const PROTOCOL_VERSIONS = Object.freeze([2, 3]);
const PROTOCOL_VERSION = PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.length - 1];
const MAX_MESSAGE_SIZE = 64 << 20; // bytes, as internal/wire.MaxMessageSize
const PARENT_WATCH_INTERVAL_MS = 200; // as the Go SDK
const SHUTDOWN_GRACE_MS = 500; // running calls may end before Shutdown exits

/** Writes one "[LEVEL] msg" line to stderr; go-plugin logs it at that level. */
function log(level, msg) {
  try {
    fs.writeSync(2, `[${level}] ${msg}\n`);
  } catch {
    // the host is gone: stderr is a broken pipe
  }
}

let socketPath = null;

// exitNow ends the process: remove the socket, SIGKILL the process group when
// the plugin leads it (the host gives each plugin its own group; a group
// whose id is our pid exists only then), exit.
function exitNow(code, group = true) {
  if (socketPath) {
    try {
      fs.unlinkSync(socketPath);
    } catch {
      // already gone
    }
  }
  if (group) {
    try {
      process.kill(-process.pid, 'SIGKILL'); // ourselves included
    } catch {
      // not a group leader (ESRCH)
    }
  }
  process.exit(code);
}

function loadProtos() {
  const dir = path.join(__dirname, '..', 'proto');
  const def = protoLoader.loadSync(
    ['tool.proto', 'health.proto', 'grpc_controller.proto', 'grpc_stdio.proto'].map((f) => path.join(dir, f)),
    { keepCase: true, longs: Number, enums: Number, defaults: true, oneofs: true, includeDirs: [dir] },
  );
  return grpc.loadPackageDefinition(def);
}

function encodeResult(name, value) {
  if (value === undefined || value === null) return Buffer.from('{}');
  if (isResult(value)) throw new ToolError(500, `function ${name}: a stream item must be a plain object; a Result is for unary functions`);
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolError(500, `function ${name} returned ${Array.isArray(value) ? 'an array' : typeof value}; a result must be a plain object or a Result`);
  }
  return encode(name, value);
}

function encode(name, value) {
  try {
    return Buffer.from(JSON.stringify(value), 'utf8');
  } catch (e) {
    throw new ToolError(500, `encode result of ${name}: ${e.message}`);
  }
}

// resultEvent is the InvokeEvent of a unary function's return value: a
// Result as an MCP result (protocol 3) or as its projection (2); a plain
// object as it is.
function resultEvent(name, value, v3) {
  if (!isResult(value)) return { data: encodeResult(name, value) };
  if (v3) return { mcp_result: encode(name, value) };
  return { data: encode(name, value.project()) };
}

const METHOD_NOT_FOUND = -32601;

// Peer is the plugin's side of one call's messages to its caller
// (protocol 3; Go's wire.Peer): notifications and requests go out on the
// call's stream, in order with its results; the host's replies settle the
// requests waiting for them. Under protocol 2 notifications are dropped
// and requests fail with RPCError -32601.
class Peer {
  constructor(call, v3) {
    this.call = call;
    this.v3 = v3;
    this.ended = false;
    this.next = 0; // the last request id issued
    this.pending = new Map(); // id -> {resolve, reject}
  }

  write(id, method, params) {
    const body = params === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(params), 'utf8');
    try {
      this.call.write({ message: { id, method, params: body } });
    } catch {
      return false;
    }
    return true;
  }

  notify(method, params) {
    if (!this.v3 || this.ended) return false;
    return this.write(0, method, params);
  }

  // request sends request method and resolves to the caller's result (an
  // object); rejects with an RPCError: the caller's, or -32601 under
  // protocol 2 or when the call ends (or is cancelled) first.
  request(method, params) {
    if (!this.v3) return Promise.reject(new RPCError(METHOD_NOT_FOUND, 'no caller can answer this request: the host speaks plugin protocol 2'));
    if (this.ended) return Promise.reject(new RPCError(METHOD_NOT_FOUND, 'no caller can answer this request: the call is over'));
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { method, resolve, reject });
      if (!this.write(id, method, params)) {
        this.pending.delete(id);
        reject(new RPCError(METHOD_NOT_FOUND, 'no caller can answer this request: the call is over'));
      }
    });
  }

  // deliver settles the request a reply answers; false for a reply to a
  // request never sent (the host is confused). A late reply is dropped.
  deliver(r) {
    const id = Number(r.id);
    const p = this.pending.get(id);
    if (!p) return id > 0 && id <= this.next;
    this.pending.delete(id);
    if (r.error) {
      let data;
      if (r.error.data && r.error.data.length) {
        try {
          data = JSON.parse(Buffer.from(r.error.data).toString('utf8'));
        } catch {
          data = undefined;
        }
      }
      p.reject(new RPCError(r.error.code, r.error.message, data));
      return true;
    }
    try {
      p.resolve(r.result && r.result.length ? JSON.parse(Buffer.from(r.result).toString('utf8')) : {});
    } catch (e) {
      p.reject(new RPCError(-32603, `the caller's result is not JSON: ${e.message}`));
    }
    return true;
  }

  // close fails the requests still waiting; later messages are not sent.
  close() {
    this.ended = true;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(new RPCError(METHOD_NOT_FOUND, 'no caller can answer this request: the call ended before the answer came'));
  }
}

function isIterable(x) {
  return x != null && (typeof x[Symbol.asyncIterator] === 'function' || typeof x[Symbol.iterator] === 'function');
}

// results runs one call and yields its InvokeEvents: one result for a
// unary function, one data event per item for a stream. Breaking out of it
// (cancel) returns the function's generator, so its finally blocks run.
async function* results(tk, c, ctx, v3) {
  const f = tk.get(c.name);
  if (!f) throw new ToolError(404, `function ${JSON.stringify(c.name)} not found`);
  if (c.stream && !f.stream) throw new ToolError(404, `function ${JSON.stringify(c.name)} does not stream`);
  if (!c.stream && f.stream) throw new ToolError(404, `function ${JSON.stringify(c.name)} streams: call it with streamCall`);
  // The SDKs' shared argument strictness (strict.js): 400 naming the
  // first fault, else the arguments as plain values.
  const args = argumentsOf(f, c.arguments);
  const out = await f.fn(ctx, args);
  if (!f.stream) {
    yield resultEvent(c.name, out, v3);
    return;
  }
  if (!isIterable(out)) throw new ToolError(500, `stream function ${c.name} returned no iterable`);
  for await (const item of out) {
    yield { data: encodeResult(c.name, item) };
    if (ctx.cancelled) return;
  }
}

function errorEvent(name, e) {
  if (e instanceof ToolError) return { code: e.code, message: e.message };
  const message = (e && e.message) || String(e);
  // One ERROR line the host shows in /health, the stack at DEBUG.
  log('ERROR', `function ${name} failed: ${(e && e.name) || 'Error'}: ${message}`);
  for (const line of String((e && e.stack) || '').split('\n').slice(1)) log('DEBUG', line.trim());
  return { code: 500, message };
}

// send writes one InvokeEvent, waiting for 'drain' when the stream is full;
// resolves false when the call is cancelled first.
function send(call, ev, ctx) {
  try {
    if (call.write(ev)) return Promise.resolve(true);
  } catch {
    return Promise.resolve(false);
  }
  return new Promise((resolve) => {
    const done = (ok) => {
      call.off('drain', onDrain);
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onAbort = () => done(false);
    call.once('drain', onDrain);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
}

async function run(tk, call, c, ctx, peer) {
  try {
    for await (const ev of results(tk, c, ctx, peer.v3)) {
      if (!(await send(call, ev, ctx))) break;
    }
  } catch (e) {
    await send(call, { error: errorEvent(c.name, e) }, ctx);
  }
  peer.close(); // nothing goes out after the result
  try {
    call.end();
  } catch {
    // the RPC is already over
  }
}

// metaOf is the caller's _meta a call carries (protocol 3), an object; {}
// for none.
function metaOf(c, v3) {
  if (!v3 || !c.meta || c.meta.length === 0) return {};
  try {
    const m = JSON.parse(Buffer.from(c.meta).toString('utf8'));
    return m !== null && typeof m === 'object' && !Array.isArray(m) ? m : {};
  } catch {
    return {};
  }
}

// invoke serves one Invoke stream: the first message starts the call, a
// later cancel (or the stream breaking) cancels its Context; a half-close
// alone does not.
function invoke(tk, call, v3) {
  let ctx = null;
  let peer = null;
  let broken = false;
  const abort = () => {
    broken = true;
    if (peer) peer.close();
    if (ctx) ctx.cancel();
  };
  call.on('data', (m) => {
    if (ctx === null) {
      if (m.msg !== 'call' || !m.call) {
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'the first message of Invoke must be a call' });
        return;
      }
      const tp = call.metadata.get('traceparent');
      peer = new Peer(call, v3);
      ctx = new Context(m.call.name, tp.length ? String(tp[0]) : '', metaOf(m.call, v3), peer);
      // Requests waiting for the client fail at cancel.
      ctx.signal.addEventListener('abort', () => peer.close(), { once: true });
      if (broken) abort();
      run(tk, call, m.call, ctx, peer);
    } else if (m.msg === 'reply' && m.reply) {
      if (!peer.deliver(m.reply)) abort(); // a reply to nothing
    } else if (m.msg === 'cancel') {
      ctx.cancel();
    }
  });
  call.on('end', () => {
    if (ctx === null) call.end();
  });
  call.on('cancelled', abort);
  call.on('error', abort);
}

function services(pkg, tk, stop, v3) {
  return [
    [pkg.grpc.health.v1.Health.service, {
      Check(call, cb) {
        const s = call.request.service;
        if (s === '' || s === 'plugin') cb(null, { status: 1 }); // SERVING
        else cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(s)}` });
      },
      Watch(call) {
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'Health.Watch is not served' });
      },
    }],
    [pkg.opentool.plugin.v2.Tool.service, {
      Load(call, cb) {
        try {
          cb(null, { document: Buffer.from(JSON.stringify(tk.document()), 'utf8') });
        } catch (e) {
          log('ERROR', `Load: ${e.message}`);
          cb(null, { error: { code: 500, message: `Load: ${e.message}` } });
        }
      },
      Invoke(call) {
        invoke(tk, call, v3);
      },
      Watch(call) {
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: "the tool's document does not change" });
      },
      // Protocol 3's MCP catalog (resources, prompts, completion): none.
      Catalog(call, cb) {
        cb({ code: grpc.status.UNIMPLEMENTED, details: 'the plugin serves no MCP catalog' });
      },
      Request(call, cb) {
        cb({ code: grpc.status.UNIMPLEMENTED, details: 'the plugin serves no MCP catalog' });
      },
    }],
    [pkg.plugin.GRPCController.service, {
      Shutdown(call, cb) {
        cb(null, {});
        setImmediate(stop);
      },
    }],
    // go-plugin's client opens this stream at connect and warns when it is
    // missing. The plugin's stderr already reaches the host directly, so the
    // stream stays open and silent until the connection ends.
    [pkg.plugin.GRPCStdio.service, { StreamStdio() {} }],
  ];
}

/**
 * The application protocol version to answer, as go-plugin picks it: the
 * highest of PROTOCOL_VERSIONS that offered (PLUGIN_PROTOCOL_VERSIONS,
 * comma-separated) names, else the oldest. When the host offers versions
 * and none of ours, that is logged (the host then refuses the handshake
 * with an error naming both sides).
 * @param {string} offered
 */
function negotiate(offered) {
  const versions = String(offered).split(',').map((v) => v.trim()).filter(Boolean);
  for (const v of [...PROTOCOL_VERSIONS].reverse()) if (versions.includes(String(v))) return v;
  if (versions.length) log('ERROR', `the host speaks plugin protocol ${versions.join(',')}; this SDK speaks ${PROTOCOL_VERSIONS.join(',')}`);
  return PROTOCOL_VERSIONS[0];
}

const NOT_A_COMMAND = `This binary is a plugin. These are not meant to be executed directly.
Please execute the program that consumes these plugins, which will
load any plugins automatically (opentool-host run --dir DIR).
Run it with --document to print its OpenTool document.
`;

/**
 * Runs toolkit as an opentool-host plugin; returns at once, the process
 * then lives until the host stops it.
 *
 * Checks the host's magic cookie (without it prints a notice to stderr and
 * exits 1; run with --document it prints the OpenTool document instead, for
 * `opentool-host validate`), authenticates the host with go-plugin's
 * AutoMTLS (mtls.js: without the host's certificate in PLUGIN_CLIENT_CERT
 * it logs why and exits 1; a connection that does not authenticate as the
 * host is refused in the TLS handshake and logged), serves gRPC over that
 * TLS on a unix socket in PLUGIN_UNIX_SOCKET_DIR with 64 MiB message
 * limits, prints the go-plugin handshake line (`1|V|unix|PATH|grpc|CERT`, V
 * the protocol version negotiated: 3, or 2 with a host that offers only 2;
 * CERT the plugin's certificate, DER in base64 without padding) on file
 * descriptor 1 and then points
 * process.stdout (console.log) at stderr. SIGTERM, the host's Shutdown and
 * the host's death (the parent pid changes, checked every 200 ms) end the
 * process; SIGTERM and parent death also SIGKILL its process group
 * (processes the plugin started).
 *
 * @param {import('./toolkit').Toolkit} toolkit
 * @param {{argv?: string[]}} [opts]
 */
function serve(toolkit, opts = {}) {
  const argv = opts.argv || process.argv.slice(2);
  if (argv[0] === '--document') {
    fs.writeSync(1, JSON.stringify(toolkit.document(), null, 2) + '\n');
    process.exit(0);
  }
  if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) {
    fs.writeSync(2, NOT_A_COMMAND);
    process.exit(1);
  }
  const version = negotiate(process.env.PLUGIN_PROTOCOL_VERSIONS || '');
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_SIZE,
    'grpc.max_send_message_length': MAX_MESSAGE_SIZE,
  });
  // TLS is this SDK's (mtls.js), so that a refused connection can be
  // logged; gRPC gets the connections that authenticated as the host.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  let tlsServer;
  let certField;
  try {
    ({ server: tlsServer, field: certField } = mtls.hostOnlyServer(
      process.env[mtls.CLIENT_CERT_ENV] || '', (socket) => injector.injectConnection(socket), log));
  } catch (e) {
    if (!(e instanceof mtls.NoHostCertificate)) throw e;
    log('ERROR', `not serving: ${e.message}`);
    process.exit(1);
  }

  const ppid = process.ppid;
  process.on('SIGTERM', () => exitNow(2));
  setInterval(() => {
    if (ppid > 1 && process.ppid !== ppid) exitNow(2); // the host died: no logging
  }, PARENT_WATCH_INTERVAL_MS).unref();

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    tlsServer.close();
    setTimeout(() => {
      server.forceShutdown();
      exitNow(0, false);
    }, SHUTDOWN_GRACE_MS);
    server.tryShutdown(() => exitNow(0, false)); // the host kills what is left of the group
  };
  for (const [service, impl] of services(loadProtos(), toolkit, stop, version >= 3)) server.addService(service, impl);

  const dir = process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir();
  socketPath = path.join(dir, `plugin${crypto.randomBytes(8).toString('hex')}.sock`);
  tlsServer.on('error', (err) => {
    if (tlsServer.listening) {
      log('ERROR', `unix:${socketPath}: ${err.message}`); // an accept failed: keep serving
      return;
    }
    log('ERROR', `cannot listen on unix:${socketPath}: ${err.message}`);
    process.exit(1);
  });
  tlsServer.listen(socketPath, () => {
    fs.writeSync(1, `${CORE_PROTOCOL_VERSION}|${version}|unix|${socketPath}|grpc|${certField}\n`);
    // Nothing else may reach the handshake pipe: console.log and
    // process.stdout.write go to stderr from here on. (Child processes
    // inheriting fd 1 still write to it: give them 'pipe' or fd 2.)
    process.stdout.write = process.stderr.write.bind(process.stderr);
  });
}

module.exports = { serve, log, negotiate, Peer, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, PROTOCOL_VERSION, PROTOCOL_VERSIONS };
