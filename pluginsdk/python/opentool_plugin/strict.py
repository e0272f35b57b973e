"""Argument strictness: the checks every call's arguments pass before the
function runs, the same in the Go, Python and Node SDKs
(testdata/sdk-strictness.json is the shared table of cases;
docs/writing-plugins.md, "Argument strictness", says the rules).

arguments(function, raw) decodes the JSON bytes of a call's arguments and
checks them against the function's declared parameters, in this order:

1. one JSON object (no bytes, or null, is {}); NaN and Infinity are not
   JSON; no member named twice at any depth;
2. no parameter the function does not declare (unless
   additional_parameters=True) and no member an object schema does not
   declare, at any depth (unless the schema says "additionalProperties":
   True); names match exactly;
3. the required parameters present and not null;
4. each parameter, in declaration order: its type (values are never
   converted), null refused, the required members of objects, enum,
   integers integral (2.0 and 1e3 are integers) and within
   +-MAX_SAFE_INTEGER, numbers finite doubles.

The first fault raises ToolError(400) with the Go SDK's message. The
result is the arguments as Python values: an integer parameter is an int,
a number parameter a float, a free-form value's numbers ints (when written
as integers within +-MAX_SAFE_INTEGER) or floats.
"""

import json
import math
import re
import sys

from .toolkit import ToolError

__all__ = ["arguments", "MAX_SAFE_INTEGER"]

# The largest integer an integer parameter takes, 2**53-1: every JSON
# reader (JavaScript's included) holds -MAX_SAFE_INTEGER..MAX_SAFE_INTEGER
# exactly, and the three SDKs refuse the others alike.
MAX_SAFE_INTEGER = 2 ** 53 - 1

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class _Num:
    """A JSON number as written; converted once the checks pass."""

    __slots__ = ("text", "plain")

    def __init__(self, text, plain):
        self.text = text
        self.plain = plain  # written as an integer: no fraction, no exponent


class _Obj(dict):
    """A JSON object; dup is the first member named twice, seq orders the
    objects that have one."""

    __slots__ = ("dup", "seq")


def _bad(fmt, *args):
    return ToolError(400, fmt % args)


def _key(path, key):
    """path with member key appended, as the Go SDK writes paths: "a.b",
    'a["b c"]'."""
    if key and _PLAIN_KEY.match(key):
        return path + "." + key if path else key
    return path + "[" + json.dumps(key, ensure_ascii=False) + "]"


def _index(path, i):
    return "%s[%d]" % (path, i)


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, _Num):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _quote(s):
    return json.dumps(s, ensure_ascii=False)


def _text(v):
    """v (a tree value or a schema's enum value) as JSON, for messages."""
    if isinstance(v, _Num):
        return v.text
    try:
        return json.dumps(_plain(v), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(v)


def _plain(v):
    """A tree value with its numbers as Python numbers (for messages)."""
    if isinstance(v, _Num):
        return float(v.text) if not v.plain else int(v.text)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _decode(raw):
    """The tree of raw (bytes): objects are _Obj, numbers _Num."""
    if isinstance(raw, (bytes, bytearray)):
        text = bytes(raw).decode("utf-8", errors="replace")
    else:
        text = raw or ""
    text = text.strip(" \t\r\n")
    if text in ("", "null"):
        return _Obj()
    counter = [0]

    def pairs(items):
        o = _Obj()
        o.dup = None
        for k, v in items:
            if k in o and o.dup is None:
                o.dup = k
                counter[0] += 1
                o.seq = counter[0]
            o[k] = v
        return o

    def constant(name):
        raise ValueError("%s is not JSON" % name)

    try:
        tree = json.loads(text, object_pairs_hook=pairs, parse_constant=constant,
                          parse_int=lambda s: _Num(s, True), parse_float=lambda s: _Num(s, False))
    except RecursionError:
        raise _bad("arguments are not valid JSON: nested too deeply")
    except ValueError as e:
        raise _bad("arguments are not valid JSON: %s", e)
    dup = _first_duplicate(tree, "")
    if dup is not None:
        _, path, key = dup
        if path == "":
            raise _bad("duplicate parameter %s", _quote(key))
        raise _bad("%s: duplicate member %s", path, _quote(key))
    return tree


def _first_duplicate(v, path):
    """(seq, path, key) of the first object with a member named twice."""
    best = None
    if isinstance(v, dict):
        if getattr(v, "dup", None) is not None:
            best = (v.seq, path, v.dup)
        for k, x in v.items():
            d = _first_duplicate(x, _key(path, k))
            if d is not None and (best is None or d[0] < best[0]):
                best = d
    elif isinstance(v, list):
        for i, x in enumerate(v):
            d = _first_duplicate(x, _index(path, i))
            if d is not None and (best is None or d[0] < best[0]):
                best = d
    return best


def _fold_match(name, declared):
    low = name.lower()
    for d in declared:
        if d.lower() == low:
            return d
    return None


def _unknown(v, schema, path):
    """Raises for the first member that an object schema along v does not
    declare (additionalProperties false), at any depth."""
    if not isinstance(schema, dict) or "type" not in schema:
        return
    t = schema["type"]
    if t == "object" and isinstance(v, dict):
        props = schema.get("properties") or {}
        closed = schema.get("additionalProperties") is not True
        for k, x in v.items():
            if k in props:
                _unknown(x, props[k], _key(path, k))
            elif closed:
                msg = "unknown field %s: the object has no member %s" % (_quote(_key(path, k)), _quote(k))
                hint = _fold_match(k, props)
                if hint is not None:
                    msg += " (names are case-sensitive: the member is %s)" % _quote(hint)
                raise ToolError(400, msg)
    elif t == "array" and isinstance(v, list):
        for i, x in enumerate(v):
            _unknown(x, schema.get("items"), _index(path, i))


def _integer_of(text):
    """(value, integral, in_range) of a JSON number literal, exactly, never
    building a large number."""
    neg = text.startswith("-")
    lit = text.lstrip("-")
    mant, exp = lit, 0
    m = re.search(r"[eE]", lit)
    if m:
        mant = lit[:m.start()]
        e = lit[m.start() + 1:].lstrip("+")
        eneg = e.startswith("-")
        e = e.lstrip("-").lstrip("0")
        if len(e) > 9:
            e = "1000000000"  # beyond the digits of any call (64 MiB)
        exp = int(e or "0")
        if eneg:
            exp = -exp
    digits = mant
    if "." in mant:
        i = mant.index(".")
        digits = mant[:i] + mant[i + 1:]
        exp -= len(mant) - i - 1
    digits = digits.lstrip("0")
    if not digits:
        return 0, True, True
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    digits = stripped
    if exp < 0:
        return 0, False, False
    if len(digits) + exp > 16:
        return 0, True, False
    n = int(digits + "0" * exp)
    if n > MAX_SAFE_INTEGER:
        return 0, True, False
    return (-n if neg else n), True, True


def _double(num, path):
    f = float(num.text)
    if math.isinf(f):
        raise _bad("parameter %s: %s is out of range: a number must be within \u00b1%r",
                   _quote(path), num.text, sys.float_info.max)
    return f


def _free(v, path):
    """A value of any type: numbers are doubles (ints when written as
    integers within +-MAX_SAFE_INTEGER). Faults in member-name order."""
    if isinstance(v, _Num):
        if v.plain:
            n = int(v.text) if len(v.text) <= 17 else None
            if n is not None and abs(n) <= MAX_SAFE_INTEGER:
                return n
        return _double(v, path)
    if isinstance(v, list):
        return [_free(x, _index(path, i)) for i, x in enumerate(v)]
    if isinstance(v, dict):
        out = dict(v)
        for k in sorted(v):
            out[k] = _free(v[k], _key(path, k))
        return out
    return v


def _same(v, e):
    if isinstance(v, _Num):
        return isinstance(e, (int, float)) and not isinstance(e, bool) and float(v.text) == float(e)
    if isinstance(v, bool) or isinstance(e, bool):
        return isinstance(v, bool) and isinstance(e, bool) and v == e
    return type(v) is type(e) and v == e


def _check(v, schema, path):
    """v checked against schema at path, converted; raises the first fault."""
    if not isinstance(schema, dict) or "type" not in schema:
        return _free(v, path)  # a "$ref": any value
    t = schema["type"]
    if v is None:
        raise _bad("parameter %s: want %s, got null", _quote(path), t)
    if t == "object":
        if not isinstance(v, dict):
            raise _bad("parameter %s: want object, got %s", _quote(path), _kind(v))
        for name in schema.get("required") or []:
            if v.get(name) is None:
                raise _bad("missing required member %s", _quote(_key(path, name)))
        props = schema.get("properties") or {}
        out = dict(v)
        for name, ps in props.items():
            if name in v:
                out[name] = _check(v[name], ps, _key(path, name))
        for name in sorted(k for k in v if k not in props):
            out[name] = _free(v[name], _key(path, name))
        return out
    if t == "array":
        if not isinstance(v, list):
            raise _bad("parameter %s: want array, got %s", _quote(path), _kind(v))
        return [_check(x, schema.get("items"), _index(path, i)) for i, x in enumerate(v)]
    if t == "string":
        ok = isinstance(v, str)
        out = v
    elif t == "boolean":
        ok = isinstance(v, bool)
        out = v
    elif t == "integer":
        ok = isinstance(v, _Num)
        if ok:
            n, integral, in_range = _integer_of(v.text)
            if not integral:
                raise _bad("parameter %s: want integer, got %s", _quote(path), v.text)
            if not in_range:
                raise _bad("parameter %s: %s is out of range: an integer must be between %d and %d",
                           _quote(path), v.text, -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
            out = n
    elif t == "number":
        ok = isinstance(v, _Num)
        if ok:
            out = _double(v, path)
    else:
        return _free(v, path)
    if not ok:
        raise _bad("parameter %s: want %s, got %s", _quote(path), t, _kind(v))
    enum = schema.get("enum")
    if enum and not any(_same(v, e) for e in enum):
        raise _bad("parameter %s: must be one of %s; got %s", _quote(path),
                   ", ".join(_text(e) for e in enum), _text(v))
    return out


def arguments(function, raw):
    """The checked arguments of a call of function (a toolkit Function)
    as a dict of Python values; raises ToolError(400) naming the first
    fault."""
    tree = _decode(raw)
    if not isinstance(tree, dict):
        raise _bad("arguments must be a JSON object, got %s", _kind(tree))
    params = function.entry["parameters"]
    by_name = {p["name"]: p for p in params}
    for k, x in tree.items():
        p = by_name.get(k)
        if p is not None:
            _unknown(x, p["schema"], _key("", k))
        elif not function.additional_parameters:
            msg = "unknown field %s: the function has no parameter %s" % (_quote(k), _quote(k))
            hint = _fold_match(k, by_name)
            if hint is not None:
                msg += " (names are case-sensitive: the parameter is %s)" % _quote(hint)
            raise ToolError(400, msg)
    for p in params:
        if p["required"] and tree.get(p["name"]) is None:
            raise _bad("missing required parameter %s", _quote(p["name"]))
    vals = {}
    for p in params:
        name = p["name"]
        if name in tree:
            vals[name] = _check(tree[name], p["schema"], _key("", name))
    for k in sorted(k for k in tree if k not in by_name):
        vals[k] = _free(tree[k], _key("", k))
    return {k: vals[k] for k in tree}  # in the order of the call
