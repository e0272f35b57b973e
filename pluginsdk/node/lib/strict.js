'use strict';
// Argument strictness: the checks every call's arguments pass before the
// function runs, the same in the Go, Python and Node SDKs
// (testdata/sdk-strictness.json is the shared table of cases;
// docs/writing-plugins.md, "Argument strictness", says the rules).
//
// argumentsOf(f, buf) parses the JSON bytes of a call's arguments with a
// parser of its own (JSON.parse lets a member named twice through, the
// last one winning, and rounds numbers before anyone can look at them)
// and checks them against the function's declared parameters, in order:
//
// 1. one JSON object (no bytes, or null, is {}); no member named twice at
//    any depth;
// 2. no parameter the function does not declare (unless
//    additionalParameters) and no member an object schema does not
//    declare, at any depth (unless the schema says additionalProperties:
//    true); names match exactly;
// 3. the required parameters present and not null;
// 4. each parameter, in declaration order: its type (values are never
//    converted), null refused, the required members of objects, enum,
//    integers integral (2.0 and 1e3 are integers) and within
//    ±Number.MAX_SAFE_INTEGER, numbers finite doubles.
//
// The first fault throws ToolError(400) with the Go SDK's message.

const { ToolError } = require('./toolkit');

const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER; // 2^53-1
const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/** A JSON number as written; converted once the checks pass. */
class Num {
  constructor(text) {
    this.text = text;
  }
}

function bad(message) {
  return new ToolError(400, message);
}

const q = (s) => JSON.stringify(s);

// key returns path with member k appended, as the Go SDK writes paths.
function key(path, k) {
  if (PLAIN_KEY.test(k)) return path ? `${path}.${k}` : k;
  return `${path}[${q(k)}]`;
}

const index = (path, i) => `${path}[${i}]`;
const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

function kind(v) {
  if (v === null) return 'null';
  if (v instanceof Num) return 'number';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v; // string, boolean
}

// put sets o[k] = v as an own, enumerable property, "__proto__" included.
function put(o, k, v) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const MAX_DEPTH = 10000; // as the Go SDK (internal/strictjson)

/**
 * parse reads text, one JSON value (RFC 8259), into plain values with
 * numbers as Num; objects that name a member twice are reported by the
 * first duplicate in document order (a syntax error anywhere wins).
 */
function parse(text) {
  let pos = 0;
  let depth = 0;
  let dup = null; // {path, key}
  const fail = (what) => {
    throw bad(`arguments are not valid JSON: ${what} at offset ${pos}`);
  };
  const space = () => {
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      pos++;
    }
  };
  const str = () => {
    STRING.lastIndex = pos;
    const m = STRING.exec(text);
    if (!m) fail('invalid string');
    pos += m[0].length;
    return JSON.parse(m[0]);
  };
  const value = (path) => {
    space();
    const c = text[pos];
    if (c === '{') {
      if (++depth > MAX_DEPTH) fail('nesting too deep');
      pos++;
      const o = {};
      space();
      if (text[pos] === '}') {
        pos++;
        depth--;
        return o;
      }
      for (;;) {
        space();
        if (text[pos] !== '"') fail('expected a member name');
        const k = str();
        space();
        if (text[pos] !== ':') fail("expected ':'");
        pos++;
        const v = value(key(path, k));
        if (has(o, k)) {
          if (dup === null) dup = { path, key: k };
        } else put(o, k, v);
        space();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === '}') {
          pos++;
          depth--;
          return o;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      if (++depth > MAX_DEPTH) fail('nesting too deep');
      pos++;
      const a = [];
      space();
      if (text[pos] === ']') {
        pos++;
        depth--;
        return a;
      }
      for (;;) {
        a.push(value(index(path, a.length)));
        space();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === ']') {
          pos++;
          depth--;
          return a;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    for (const [lit, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(lit, pos)) {
        pos += lit.length;
        return v;
      }
    }
    NUMBER.lastIndex = pos;
    const m = NUMBER.exec(text);
    if (!m) fail(pos < text.length ? `unexpected ${q(text[pos])}` : 'unexpected end');
    pos += m[0].length;
    return new Num(m[0]);
  };
  const v = value('');
  space();
  if (pos < text.length) fail(`unexpected ${q(text[pos])} after the value`);
  if (dup !== null) {
    if (dup.path === '') throw bad(`duplicate parameter ${q(dup.key)}`);
    throw bad(`${dup.path}: duplicate member ${q(dup.key)}`);
  }
  return v;
}

function foldMatch(name, declared) {
  const low = name.toLowerCase();
  return declared.find((d) => d.toLowerCase() === low);
}

// unknown throws for the first member an object schema along v does not
// declare (additionalProperties false), at any depth.
function unknown(v, schema, path) {
  if (!schema || typeof schema !== 'object' || !('type' in schema)) return;
  if (schema.type === 'object' && kind(v) === 'object') {
    const props = schema.properties || {};
    const closed = schema.additionalProperties !== true;
    for (const k of Object.keys(v)) {
      if (has(props, k)) unknown(v[k], props[k], key(path, k));
      else if (closed) {
        let msg = `unknown field ${q(key(path, k))}: the object has no member ${q(k)}`;
        const hint = foldMatch(k, Object.keys(props));
        if (hint !== undefined) msg += ` (names are case-sensitive: the member is ${q(hint)})`;
        throw bad(msg);
      }
    }
  } else if (schema.type === 'array' && Array.isArray(v)) {
    v.forEach((x, i) => unknown(x, schema.items, index(path, i)));
  }
}

/**
 * integerOf reads a JSON number literal exactly: {integral, inRange,
 * value}; it never builds a large number (1e999999999 is out of range at
 * once).
 */
function integerOf(text) {
  const neg = text.startsWith('-');
  const lit = neg ? text.slice(1) : text;
  let mant = lit;
  let exp = 0;
  const e = lit.search(/[eE]/);
  if (e >= 0) {
    mant = lit.slice(0, e);
    let es = lit.slice(e + 1).replace(/^\+/, '');
    const eneg = es.startsWith('-');
    es = es.replace(/^-/, '').replace(/^0+/, '');
    if (es.length > 9) es = '1000000000'; // beyond the digits of any call (64 MiB)
    exp = Number(es || '0') * (eneg ? -1 : 1);
  }
  let digits = mant;
  const dot = mant.indexOf('.');
  if (dot >= 0) {
    digits = mant.slice(0, dot) + mant.slice(dot + 1);
    exp -= mant.length - dot - 1;
  }
  digits = digits.replace(/^0+/, '');
  if (digits === '') return { integral: true, inRange: true, value: 0 };
  const stripped = digits.replace(/0+$/, '');
  exp += digits.length - stripped.length;
  digits = stripped;
  if (exp < 0) return { integral: false, inRange: false, value: 0 };
  if (digits.length + exp > 16) return { integral: true, inRange: false, value: 0 };
  const n = BigInt(digits + '0'.repeat(exp));
  if (n > BigInt(MAX_SAFE_INTEGER)) return { integral: true, inRange: false, value: 0 };
  const value = Number(n);
  return { integral: true, inRange: true, value: neg && value !== 0 ? -value : value };
}

function double(num, path) {
  const f = Number(num.text);
  if (!Number.isFinite(f)) {
    throw bad(`parameter ${q(path)}: ${num.text} is out of range: a number must be within ±${Number.MAX_VALUE}`);
  }
  return f;
}

// free converts a value of any type (numbers are doubles), its faults in
// member-name order.
function free(v, path) {
  if (v instanceof Num) return double(v, path);
  if (Array.isArray(v)) return v.map((x, i) => free(x, index(path, i)));
  if (v !== null && typeof v === 'object') {
    const out = {};
    const vals = {};
    for (const k of Object.keys(v).sort()) put(vals, k, free(v[k], key(path, k)));
    for (const k of Object.keys(v)) put(out, k, vals[k]);
    return out;
  }
  return v;
}

function same(v, e) {
  if (v instanceof Num) return typeof e === 'number' && Number(v.text) === e;
  return v === e;
}

function text(v) {
  if (v instanceof Num) return v.text;
  return JSON.stringify(v);
}

// check returns v checked against schema at path, converted; throws the
// first fault.
function check(v, schema, path) {
  if (!schema || typeof schema !== 'object' || !('type' in schema)) return free(v, path); // a $ref: any value
  const t = schema.type;
  if (v === null) throw bad(`parameter ${q(path)}: want ${t}, got null`);
  const wrong = () => bad(`parameter ${q(path)}: want ${t}, got ${kind(v)}`);
  let out = v;
  switch (t) {
    case 'object': {
      if (kind(v) !== 'object') throw wrong();
      for (const name of schema.required || []) {
        if (!has(v, name) || v[name] === null) throw bad(`missing required member ${q(key(path, name))}`);
      }
      const props = schema.properties || {};
      const vals = {};
      for (const name of Object.keys(props)) {
        if (has(v, name)) put(vals, name, check(v[name], props[name], key(path, name)));
      }
      for (const k of Object.keys(v).filter((k) => !has(props, k)).sort()) put(vals, k, free(v[k], key(path, k)));
      const o = {};
      for (const k of Object.keys(v)) put(o, k, vals[k]);
      return o;
    }
    case 'array':
      if (!Array.isArray(v)) throw wrong();
      return v.map((x, i) => check(x, schema.items, index(path, i)));
    case 'string':
      if (typeof v !== 'string') throw wrong();
      break;
    case 'boolean':
      if (typeof v !== 'boolean') throw wrong();
      break;
    case 'integer': {
      if (!(v instanceof Num)) throw wrong();
      const n = integerOf(v.text);
      if (!n.integral) throw bad(`parameter ${q(path)}: want integer, got ${v.text}`);
      if (!n.inRange) {
        throw bad(`parameter ${q(path)}: ${v.text} is out of range: an integer must be between ${-MAX_SAFE_INTEGER} and ${MAX_SAFE_INTEGER}`);
      }
      out = n.value;
      break;
    }
    case 'number':
      if (!(v instanceof Num)) throw wrong();
      out = double(v, path);
      break;
    default:
      return free(v, path);
  }
  const en = schema.enum;
  if (Array.isArray(en) && en.length && !en.some((e) => same(v, e))) {
    throw bad(`parameter ${q(path)}: must be one of ${en.map((e) => JSON.stringify(e)).join(', ')}; got ${text(v)}`);
  }
  return out;
}

/**
 * argumentsOf returns the checked arguments of a call of function f (a
 * Toolkit entry: {entry, additionalParameters}) from buf, the JSON bytes
 * the host sent, as plain JavaScript values; throws ToolError(400) naming
 * the first fault.
 */
function argumentsOf(f, buf) {
  const raw = buf && buf.length ? buf.toString('utf8').replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '') : '';
  let tree = {};
  if (raw !== '' && raw !== 'null') {
    try {
      tree = parse(raw);
    } catch (e) {
      if (e instanceof RangeError) throw bad('arguments are not valid JSON: nested too deeply');
      throw e;
    }
  }
  if (kind(tree) !== 'object') throw bad(`arguments must be a JSON object, got ${kind(tree)}`);
  const params = f.entry.parameters;
  const byName = new Map(params.map((p) => [p.name, p]));
  for (const k of Object.keys(tree)) {
    const p = byName.get(k);
    if (p) unknown(tree[k], p.schema, key('', k));
    else if (!f.additionalParameters) {
      let msg = `unknown field ${q(k)}: the function has no parameter ${q(k)}`;
      const hint = foldMatch(k, [...byName.keys()]);
      if (hint !== undefined) msg += ` (names are case-sensitive: the parameter is ${q(hint)})`;
      throw bad(msg);
    }
  }
  for (const p of params) {
    if (p.required && (!has(tree, p.name) || tree[p.name] === null)) throw bad(`missing required parameter ${q(p.name)}`);
  }
  const vals = {};
  for (const p of params) {
    if (has(tree, p.name)) put(vals, p.name, check(tree[p.name], p.schema, key('', p.name)));
  }
  for (const k of Object.keys(tree).filter((k) => !byName.has(k)).sort()) put(vals, k, free(tree[k], key('', k)));
  const out = {};
  for (const k of Object.keys(tree)) put(out, k, vals[k]);
  return out;
}

module.exports = { argumentsOf, parse, integerOf, MAX_SAFE_INTEGER };
