'use strict';
// MCP tool results: content blocks, structuredContent and isError.
//
// A unary function may return a Result instead of a plain object. MCP
// clients of the host (/mcp, `opentool-host mcp`) receive it as it is, an
// MCP CallToolResult (MCP 2025-11-25 "Tools", Tool Result); every other
// caller (/opentool/call, Open Tool Calling) gets its projection, the one
// the host documents (docs/writing-plugins.md) and Result#project()
// computes:
//
//   structuredContent, an object   the result: that object
//   structuredContent, other       {"result": VALUE}
//   no structuredContent           {"content": [BLOCKS], "text": TEXT}
//   isError: true                  tool error 500 with TEXT
//
// TEXT is the text blocks' text joined by "\n". Mirrors the Python SDK's
// opentool_plugin/content.py.

/** MCP's log levels (RFC 5424 severities), lowest first. */
const { ToolError } = require('./errors');

const LOG_LEVELS = Object.freeze(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);

// The text of an isError result without text blocks, as the host says it.
const NO_ERROR_TEXT = 'the MCP tool reported an error without text';

const BLOCK_TYPES = ['text', 'image', 'audio', 'resource_link', 'resource'];
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);

function block(type, fields, { annotations, meta } = {}) {
  const b = { type };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null) b[k] = v;
  if (annotations !== undefined) {
    if (!isObject(annotations)) throw new TypeError('annotations must be an object (audience, priority, lastModified)');
    b.annotations = { ...annotations };
  }
  if (meta !== undefined) {
    if (!isObject(meta)) throw new TypeError('_meta must be an object');
    b._meta = { ...meta };
  }
  return b;
}

// base64 returns data as standard base64 text: a Buffer, Uint8Array or
// ArrayBuffer is encoded; a string is taken as base64 already and checked.
function base64(data, what) {
  if (Buffer.isBuffer(data)) return data.toString('base64');
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('base64');
  if (typeof data === 'string') {
    if (!BASE64.test(data)) throw new Error(`${what}: a string must be standard base64 (give a Buffer to have the SDK encode it)`);
    return data;
  }
  throw new TypeError(`${what}: data must be a Buffer or Uint8Array (or base64 text), got ${data === null ? 'null' : typeof data}`);
}

/** A text content block: {type: 'text', text}. opts: {annotations, meta}. */
function text(t, opts) {
  if (typeof t !== 'string') throw new TypeError(`text: want a string, got ${typeof t}`);
  return block('text', { text: t }, opts);
}

function media(type, data, mimeType, opts) {
  if (typeof mimeType !== 'string' || !mimeType) throw new Error(`${type}: mimeType must be a MIME type such as ${type}/png`);
  return block(type, { data: base64(data, type), mimeType }, opts);
}

/**
 * An image content block: {type: 'image', data: BASE64, mimeType}. data is
 * the image's bytes (a Buffer or Uint8Array: the SDK encodes them) or base64
 * text. opts: {annotations, meta}.
 */
function image(data, mimeType, opts) {
  return media('image', data, mimeType, opts);
}

/** An audio content block: {type: 'audio', data: BASE64, mimeType}; data as for image. */
function audio(data, mimeType, opts) {
  return media('audio', data, mimeType, opts);
}

/**
 * A resource link content block: {type: 'resource_link', uri, name, ...}:
 * a resource the client may read. link: {uri, name, title, description,
 * mimeType, size, annotations, meta}.
 */
function resourceLink({ uri, name, title, description, mimeType, size, annotations, meta } = {}) {
  if (typeof uri !== 'string' || !uri || typeof name !== 'string' || !name) {
    throw new Error('resourceLink: uri and name must be non-empty strings');
  }
  return block('resource_link', { uri, name, title, description, mimeType, size }, { annotations, meta });
}

/**
 * An embedded resource content block: {type: 'resource', resource: {uri,
 * mimeType, text | blob}}: exactly one of text (a string) and blob (a
 * Buffer, or base64 text). r: {uri, mimeType, text, blob, annotations, meta}.
 */
function embeddedResource({ uri, mimeType, text: t, blob, annotations, meta } = {}) {
  if (typeof uri !== 'string' || !uri) throw new Error('embeddedResource: uri must be a non-empty string');
  if ((t === undefined) === (blob === undefined)) throw new Error('embeddedResource: give exactly one of text and blob');
  const resource = { uri };
  if (mimeType !== undefined) resource.mimeType = mimeType;
  if (t !== undefined) {
    if (typeof t !== 'string') throw new TypeError('embeddedResource: text must be a string');
    resource.text = t;
  } else {
    resource.blob = base64(blob, 'embeddedResource');
  }
  return block('resource', { resource }, { annotations, meta });
}

const RESULT = Symbol.for('opentool-plugin.Result');

/**
 * A unary function's result as MCP says it.
 *
 *   return new Result({ content: [text('a dot'), image(png, 'image/png')] });
 *
 * content: an array of content blocks (text(), image(), audio(),
 * resourceLink(), embeddedResource(), or objects of that shape; a string is
 * a text block); structuredContent: any JSON value (an object is what MCP's
 * outputSchema describes); isError: the tool failed (MCP clients see the
 * result, OpenTool callers a tool error 500 with its text); meta: the
 * result's _meta.
 */
class Result {
  constructor({ content = [], structuredContent, isError = false, meta } = {}) {
    if (typeof content === 'string' || isObject(content)) content = [content];
    if (!Array.isArray(content)) throw new TypeError('Result: content must be an array of content blocks');
    this.content = content.map((b, i) => {
      if (typeof b === 'string') return text(b);
      if (!isObject(b) || !BLOCK_TYPES.includes(b.type)) {
        throw new Error(`Result: content[${i}] is not a content block (an object whose type is one of ${BLOCK_TYPES.join(', ')})`);
      }
      return b;
    });
    if (meta !== undefined && !isObject(meta)) throw new TypeError('Result: meta must be an object');
    this.structuredContent = structuredContent;
    this.isError = Boolean(isError);
    this.meta = meta;
    this[RESULT] = true;
  }

  /** The MCP CallToolResult, as a plain object. */
  toJSON() {
    const r = { content: this.content };
    if (this.structuredContent !== undefined && this.structuredContent !== null) r.structuredContent = this.structuredContent;
    if (this.isError) r.isError = true;
    if (this.meta !== undefined) r._meta = this.meta;
    return r;
  }

  /** The text blocks' text joined by newlines ('' when there is none). */
  text() {
    return this.content.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('\n');
  }

  /**
   * The OpenTool result object of this result (the table above). Throws a
   * ToolError(500, TEXT) when isError.
   */
  project() {
    if (this.isError) throw new ToolError(500, this.text() || NO_ERROR_TEXT);
    const sc = this.structuredContent;
    if (sc !== undefined && sc !== null) return isObject(sc) ? sc : { result: sc };
    return { content: this.content, text: this.text() };
  }
}

/** Whether x is a Result (of this copy of the SDK or another). */
function isResult(x) {
  return x instanceof Result || (x !== null && typeof x === 'object' && x[RESULT] === true);
}

module.exports = { Result, isResult, text, image, audio, resourceLink, embeddedResource, LOG_LEVELS };
