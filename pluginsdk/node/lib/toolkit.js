'use strict';
// Toolkit: OpenTool functions declared in JavaScript.
//
// A Toolkit collects async functions, builds the OpenTool 1.1.0 document the
// host asks for with Load (plus the OpenTool 2.0 "stream" field for stream
// functions), and finds a function by name for the server (server.js holds
// the wire). Mirrors the Python SDK (pluginsdk/python/opentool_plugin).

const { LOG_LEVELS } = require('./content');
const { ToolError } = require('./errors');

const NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
const SCHEMA_TYPES = ['boolean', 'integer', 'number', 'string', 'array', 'object'];

/**
 * A JSON-RPC error answering a request to the client (ctx.request,
 * ctx.elicit, ctx.createMessage, ctx.listRoots): the client's own, or the
 * host's when no client can answer (code -32601: an OpenTool caller, an
 * MCP client without the capability, a stateless /mcp request, a host of
 * plugin protocol 2).
 */
class RPCError extends Error {
  /** @param {number} code @param {string} message @param {unknown} [data] */
  constructor(code, message, data) {
    super(String(message));
    this.name = 'RPCError';
    this.code = Math.trunc(Number(code));
    this.data = data;
  }
}

const finite = (what, v) => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`progress: ${what} must be a finite number, got ${JSON.stringify(v)}`);
};

/**
 * What a running call knows about itself, and how it talks to its caller.
 * `signal` is an AbortSignal that aborts when the host sends cancel for
 * this call (its caller went away or its deadline passed) or the call's
 * stream breaks: pass it to fetch, child processes and timers. `cancelled`
 * is true once it has. `sleep(ms)` waits up to ms milliseconds and
 * resolves true early when the call is cancelled. The host kills a plugin
 * that has not ended a cancelled call within its grace period (500 ms), so
 * long work must check.
 *
 * During the call (plugin protocol 3; with a host of protocol 2 they do
 * nothing and return false): `progress(progress, total, message)` reports
 * progress to an MCP caller that asked for it (notifications/progress) and
 * to /opentool/streamCall; `log(level, data, logger)` sends a log message
 * to an MCP caller (notifications/message, filtered by its
 * logging/setLevel). `meta` is the _meta of the MCP caller's tools/call
 * ({} for none).
 */
class Context {
  /**
   * @param {string} name the function's name
   * @param {string} traceparent the caller's W3C trace context
   *   ("00-TRACEID-SPANID-FLAGS", the host's execute_tool span) or "":
   *   hand it to your own OpenTelemetry setup so your spans join the trace.
   * @param {object} [meta] the caller's MCP _meta ({} for none)
   * @param {object} [peer] the call's side of its messages (the SDK's;
   *   notify(method, params) -> boolean); none: nobody to send to
   */
  constructor(name = '', traceparent = '', meta = {}, peer = null) {
    this.name = name;
    this.traceparent = traceparent;
    this.meta = meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? { ...meta } : {};
    this._peer = peer;
    this._ac = new AbortController();
  }

  /** @returns {AbortSignal} */
  get signal() {
    return this._ac.signal;
  }

  /** @returns {boolean} */
  get cancelled() {
    return this._ac.signal.aborted;
  }

  /** Resolves after ms milliseconds (false) or at cancel (true). */
  sleep(ms) {
    const signal = this._ac.signal;
    if (signal.aborted) return Promise.resolve(true);
    return new Promise((resolve) => {
      const onAbort = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(false);
      }, Math.max(0, Number(ms) || 0));
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Marks the call cancelled (the SDK does this; tests may too). */
  cancel() {
    this._ac.abort();
  }

  /**
   * Sends MCP notification method with params (an object, or undefined for
   * none) to the caller; progress() and log() are the usual ones (the host
   * relays notifications/progress and notifications/message and drops
   * others). Returns true when it was sent, false when there is nobody to
   * send it to (a host of protocol 2, or the call is over). Throws a
   * TypeError when params is not a plain object or not JSON.
   */
  notify(method, params) {
    if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
      throw new TypeError(`notify ${method}: params must be an object`);
    }
    if (!this._peer) return false;
    return this._peer.notify(method, params);
  }

  /**
   * Reports the call's progress (MCP "Utilities: Progress"): progress so
   * far, total when known, a message. An MCP caller gets
   * notifications/progress with its own progress token; one that asked
   * for no progress (no progressToken in its _meta) gets nothing, and
   * neither does an OpenTool caller of /opentool/call; /opentool/streamCall
   * gets event:progress frames. Returns true when it was sent. Throws a
   * TypeError for a progress or total that is not a finite number.
   */
  progress(progress, total, message) {
    finite('progress', progress);
    if (total !== undefined && total !== null) finite('total', total);
    if (message !== undefined && message !== null && typeof message !== 'string') throw new TypeError('progress: message must be a string');
    const token = this.meta.progressToken;
    if (token === undefined || token === null) return false;
    const params = { progressToken: token, progress };
    if (total !== undefined && total !== null) params.total = total;
    if (message !== undefined && message !== null) params.message = message;
    return this.notify('notifications/progress', params);
  }

  /**
   * Sends a log message to an MCP caller (MCP "Server Utilities: Logging",
   * notifications/message): level one of debug, info, notice, warning,
   * error, critical, alert, emergency; data any JSON value; logger a name
   * (optional). The host forwards it when level is at or above the one the
   * client set with logging/setLevel. Returns true when it was sent.
   * Throws an Error for another level.
   */
  log(level, data, logger) {
    if (!LOG_LEVELS.includes(level)) throw new Error(`log level ${JSON.stringify(level)} is not one of MCP's: ${LOG_LEVELS.join(', ')}`);
    if (logger !== undefined && logger !== null && typeof logger !== 'string') throw new TypeError('log: logger must be a string');
    const params = { level };
    if (logger) params.logger = logger;
    params.data = data === undefined ? null : data;
    return this.notify('notifications/message', params);
  }

  /**
   * Sends MCP request method (sampling/createMessage, elicitation/create or
   * roots/list, MCP "Client Features") with params (an object) to the MCP
   * client that made the call and resolves to its result, an object.
   * Rejects with an RPCError: the client's JSON-RPC error, or the host's
   * with code -32601 when no client can answer (an OpenTool caller, a
   * client without the capability, a stateless /mcp request, a host of
   * protocol 2, the call cancelled or over).
   */
  async request(method, params) {
    if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
      throw new TypeError(`request ${method}: params must be an object`);
    }
    if (!this._peer || typeof this._peer.request !== 'function') {
      throw new RPCError(-32601, 'no caller can answer this request');
    }
    return this._peer.request(method, params);
  }

  /**
   * Asks the MCP client's user for input (elicitation/create): message, and
   * requestedSchema, a JSON Schema of a flat object. Resolves to the
   * client's answer: {action: 'accept' | 'decline' | 'cancel', content}.
   */
  elicit(message, requestedSchema) {
    return this.request('elicitation/create', { message, requestedSchema });
  }

  /**
   * Asks the MCP client for a completion from its model
   * (sampling/createMessage). params: MCP's members as they are ({messages,
   * maxTokens, systemPrompt, ...}); a string in messages is a user message
   * of that text. Resolves to {role, content, model, stopReason}.
   */
  createMessage(params = {}) {
    const messages = (params.messages || []).map((m) => (typeof m === 'string' ? { role: 'user', content: { type: 'text', text: m } } : m));
    return this.request('sampling/createMessage', { ...params, messages });
  }

  /** Asks the MCP client for its roots (roots/list): resolves to {roots: [{uri, name}]}. */
  listRoots() {
    return this.request('roots/list', {});
  }
}

// schema checks a JSON Schema object the way the host will and completes it:
// an object without properties gets "properties": {} (the host requires the
// member); with closed (a parameter's schema), an object without
// additionalProperties gets additionalProperties: false, at any depth, so
// that the document says what the SDK enforces (strict.js): members an
// object does not declare are refused unless it says true. Throws an Error
// naming where for a fault.
function schema(s, where, closed = false) {
  if (s === null || typeof s !== 'object' || Array.isArray(s)) {
    throw new Error(`${where}: a schema must be an object, got ${JSON.stringify(s)}`);
  }
  const out = { ...s };
  if ('$ref' in out) return out;
  if (!SCHEMA_TYPES.includes(out.type)) {
    throw new Error(`${where}: schema type must be one of ${SCHEMA_TYPES.join(', ')}, got ${JSON.stringify(out.type)}`);
  }
  if (out.type === 'object') {
    const props = out.properties || {};
    out.properties = {};
    for (const [k, v] of Object.entries(props)) out.properties[k] = schema(v, `${where}.properties.${k}`, closed);
    if ('additionalProperties' in out && typeof out.additionalProperties !== 'boolean') {
      throw new Error(`${where}: additionalProperties must be true or false, got ${JSON.stringify(out.additionalProperties)}`);
    }
    if ('required' in out && !(Array.isArray(out.required) && out.required.every((r) => typeof r === 'string'))) {
      throw new Error(`${where}: required must be an array of member names, got ${JSON.stringify(out.required)}`);
    }
    if (closed && !('additionalProperties' in out)) out.additionalProperties = false;
  }
  if (out.type === 'array') {
    if (!('items' in out)) throw new Error(`${where}: an array schema needs items`);
    out.items = schema(out.items, `${where}.items`, closed);
  }
  return out;
}

const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

// parameterList turns {name: JSON Schema + "required" + "description"} (or
// {name: {schema, required, description}}, an OpenTool Parameter Object)
// into the document's parameter list.
function parameterList(fname, parameters) {
  if (parameters === undefined || parameters === null) return [];
  if (!isObject(parameters)) {
    throw new Error(`function ${fname}: parameters must be an object of name -> JSON Schema`);
  }
  return Object.entries(parameters).map(([pname, spec]) => {
    const where = `function ${fname}: parameter ${pname}`;
    if (!isObject(spec)) {
      throw new Error(`${where}: want an object (JSON Schema), got ${JSON.stringify(spec)}`);
    }
    let s;
    let required;
    let description;
    if (isObject(spec.schema)) {
      // A Parameter Object: the schema's own required lists an object's
      // required members.
      const extra = Object.keys(spec).filter((k) => !['schema', 'required', 'description'].includes(k));
      if (extra.length) {
        throw new Error(`${where}: a parameter given with schema takes only schema, required and description, not ${extra.join(', ')}`);
      }
      ({ schema: s, required = false, description } = spec);
    } else if (typeof spec.required === 'boolean' || spec.required === undefined) {
      // The short form: the schema, plus required (true or false) for the
      // parameter and description.
      ({ required = false, description, ...s } = spec);
    } else {
      // required is not a boolean: the schema's own (an object's members).
      ({ description, ...s } = spec);
      required = false;
    }
    if (typeof required !== 'boolean') throw new Error(`${where}: required must be true or false, got ${JSON.stringify(required)}`);
    const entry = { name: pname };
    if (description) entry.description = String(description);
    entry.schema = schema(s, where, true);
    entry.required = required;
    return entry;
  });
}

/**
 * A set of functions served as one OpenTool plugin.
 *
 *   const tk = new Toolkit({ title: 'nodeecho', version: '1.0.0' });
 *   tk.function('echo', {
 *     description: 'Echo text.',
 *     parameters: { text: { type: 'string', required: true } },
 *   }, async (ctx, { text }) => ({ echo: text }));
 *   tk.stream('count', { description: 'Count to n.', parameters: { n: { type: 'integer', required: true } } },
 *     async function* (ctx, { n }) { for (let i = 1; i <= n; i++) yield { i }; });
 *   serve(tk);
 */
class Toolkit {
  /** @param {{title: string, version: string, description?: string}} info */
  constructor({ title, version, description } = {}) {
    if (!title || !version) throw new Error('Toolkit needs a title and a version');
    this.info = { title: String(title), version: String(version) };
    if (description) this.info.description = String(description);
    this._fns = new Map();
  }

  /**
   * Adds a unary function: fn(ctx, args) returns (or resolves to) a plain
   * object, the result (undefined or null is {}), or a Result (content
   * blocks, structuredContent, isError: content.js).
   * opts: {description, parameters, returns, additionalParameters}.
   */
  function(name, opts, fn) {
    return this._add(name, opts, fn, false);
  }

  /**
   * Adds a streaming function: fn(ctx, args) returns an iterable or async
   * iterable (an async generator) of plain objects, one data event each;
   * opts.returns describes one item.
   */
  stream(name, opts, fn) {
    return this._add(name, opts, fn, true);
  }

  _add(name, opts = {}, fn, stream) {
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw new Error(`function name ${JSON.stringify(name)} does not match ${NAME_RE}`);
    }
    if (typeof fn !== 'function') throw new Error(`function ${name}: the implementation must be a function`);
    if (!opts.description) throw new Error(`function ${name} needs a description`);
    if (this._fns.has(name)) throw new Error(`function ${name} is defined twice`);
    const entry = {
      name,
      description: String(opts.description),
      parameters: parameterList(name, opts.parameters),
    };
    // The host refuses undeclared arguments before the call arrives.
    if (!opts.additionalParameters) entry.additionalParameters = false;
    if (opts.returns !== undefined) {
      const ret = { name: stream ? 'item' : 'result', schema: schema(opts.returns, `function ${name}: returns`) };
      if (stream) entry.stream = { data: ret };
      else entry.return = ret;
    } else if (stream) {
      entry.stream = { data: { name: 'item', schema: { type: 'object', properties: {} } } };
    }
    this._fns.set(name, { name, fn, stream, entry, additionalParameters: Boolean(opts.additionalParameters) });
    return this;
  }

  /**
   * The function named name ({name, fn, stream, entry,
   * additionalParameters}), or undefined.
   */
  get(name) {
    return this._fns.get(name);
  }

  /** The OpenTool 1.1.0 document, as an object. */
  document() {
    return {
      opentool: '1.1.0',
      info: { ...this.info },
      functions: [...this._fns.values()].map((f) => f.entry),
    };
  }
}

module.exports = { Toolkit, ToolError, RPCError, Context, NAME_RE };
