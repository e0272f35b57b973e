"""Toolkit: OpenTool functions declared with decorators.

A Toolkit collects plain Python functions, builds the OpenTool 1.1.0 document
the host asks for with Load (plus the OpenTool 2.0 "stream" field for
generator functions), and runs one call by name (see server.py for the wire).
"""

import inspect
import json
import re
import threading

__all__ = ["Toolkit", "ToolError", "Context", "Function"]

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_SCHEMA_TYPES = ("boolean", "integer", "number", "string", "array", "object")

# Python annotations understood when a function gives no parameters= dict.
_ANNOTATION_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ToolError(Exception):
    """An error with a code, sent to the caller as the function's error.

    Codes: 400 invalid arguments, 404 unknown function, 500 tool failure, or
    the tool's own. Any other exception a function raises becomes code 500
    with its message.
    """

    def __init__(self, code, message):
        super().__init__(message)
        self.code = int(code)
        self.message = str(message)

    def __str__(self):
        return "tool error %d: %s" % (self.code, self.message)


class Context:
    """What a running call knows about itself.

    ``cancelled()`` is true once the host sent cancel for this call (its
    caller went away or its deadline passed) or the call's stream broke.
    ``wait(timeout)`` sleeps up to timeout seconds and returns early, True,
    when the call is cancelled: use it instead of time.sleep in long work.
    The host kills a plugin that does not end a cancelled call within its
    grace period (500 ms), so long calls should check.
    """

    def __init__(self, name="", traceparent=""):
        self.name = name
        # The caller's W3C trace context ("00-TRACEID-SPANID-FLAGS", the
        # host's execute_tool span), or "": hand it to your own
        # OpenTelemetry setup so your spans join the caller's trace.
        self.traceparent = traceparent
        self._event = threading.Event()

    def cancelled(self):
        return self._event.is_set()

    def wait(self, timeout=None):
        return self._event.wait(timeout)

    def cancel(self):
        """Mark the call cancelled (the SDK does this; tests may too)."""
        self._event.set()

    @property
    def event(self):
        """The threading.Event set when the call is cancelled."""
        return self._event


class Function:
    """One function of a Toolkit: its document entry and its Python code."""

    def __init__(self, fn, name, description, parameters, returns, stream, additional_parameters):
        self.fn = fn
        self.name = name
        self.stream = stream
        self.signature = inspect.signature(fn)
        # Whether a call may give parameters the function does not declare
        # (strict.py checks every call's arguments against entry).
        self.additional_parameters = bool(additional_parameters)
        params = _parameters(fn, name, parameters, self.signature)
        entry = {"name": name, "description": description, "parameters": params}
        if not additional_parameters:
            # The host refuses undeclared arguments before the call arrives.
            entry["additionalParameters"] = False
        if returns is not None:
            ret = {"name": "item" if stream else "result", "schema": _schema(returns, "%s: returns" % name)}
            if stream:
                entry["stream"] = {"data": ret}
            else:
                entry["return"] = ret
        elif stream:
            entry["stream"] = {"data": {"name": "item", "schema": {"type": "object", "properties": {}}}}
        self.entry = entry


def _schema(s, where, closed=False):
    """Checks a JSON Schema dict the way the host will, and completes it:
    an object without properties gets "properties": {} (the host requires
    the member); with closed (a parameter's schema), an object without
    "additionalProperties" gets "additionalProperties": False, at any
    depth, so that the document says what the SDK enforces: members an
    object does not declare are refused unless it says True. Raises
    ValueError naming where for a fault."""
    if not isinstance(s, dict):
        raise ValueError("%s: a schema must be a dict, got %r" % (where, s))
    s = dict(s)
    if "$ref" in s:
        return s
    t = s.get("type")
    if t not in _SCHEMA_TYPES:
        raise ValueError("%s: schema type must be one of %s, got %r" % (where, ", ".join(_SCHEMA_TYPES), t))
    if t == "object":
        props = s.get("properties") or {}
        s["properties"] = {k: _schema(v, "%s.properties.%s" % (where, k), closed) for k, v in props.items()}
        if "additionalProperties" in s and not isinstance(s["additionalProperties"], bool):
            raise ValueError("%s: additionalProperties must be True or False, got %r" % (where, s["additionalProperties"]))
        req = s.get("required")
        if req is not None and (not isinstance(req, list) or not all(isinstance(r, str) for r in req)):
            raise ValueError("%s: required must be a list of member names, got %r" % (where, req))
        if closed:
            s.setdefault("additionalProperties", False)
    if t == "array":
        if "items" not in s:
            raise ValueError("%s: an array schema needs items" % where)
        s["items"] = _schema(s["items"], where + ".items", closed)
    return s


def _parameters(fn, name, parameters, sig):
    """The document's parameter list: from parameters= (name -> JSON Schema
    with the extra keys "required" and "description") or, when it is None,
    from the function's signature and annotations."""
    args = list(sig.parameters.values())
    if not args or args[0].kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        raise ValueError("function %s: the first parameter must be the call context (ctx)" % name)
    args = args[1:]
    out = []
    if parameters is None:
        for p in args:
            if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
                continue
            t = _ANNOTATION_TYPES.get(p.annotation)
            schema = {"type": t} if t else {"type": "string"}
            if p.annotation in (dict,):
                # A dict: any object (a free-form one).
                schema = {"type": "object", "properties": {}, "additionalProperties": True}
            out.append({"name": p.name, "schema": schema, "required": p.default is inspect.Parameter.empty})
        return out
    if not isinstance(parameters, dict):
        raise ValueError("function %s: parameters must be a dict of name -> JSON Schema" % name)
    for pname, spec in parameters.items():
        where = "function %s: parameter %s" % (name, pname)
        if not isinstance(spec, dict):
            raise ValueError("%s: want a dict (JSON Schema), got %r" % (where, spec))
        spec = dict(spec)
        if isinstance(spec.get("schema"), dict):
            # An OpenTool Parameter Object: {"schema", "required",
            # "description"}; the schema's own "required" lists an
            # object's required members.
            extra = sorted(set(spec) - {"schema", "required", "description"})
            if extra:
                raise ValueError("%s: a parameter given with \"schema\" takes only schema, required and description, not %s"
                                 % (where, ", ".join(extra)))
            schema = spec["schema"]
            required = spec.get("required", False)
        else:
            # The short form: the schema itself, plus "required": True or
            # False for the parameter (a list stays in the schema: an
            # object's required members) and "description".
            schema = spec
            required = spec.pop("required") if isinstance(spec.get("required"), bool) else False
        if not isinstance(required, bool):
            raise ValueError("%s: required must be True or False, got %r" % (where, required))
        desc = spec.pop("description", None) if schema is spec else spec.get("description")
        entry = {"name": pname}
        if desc:
            entry["description"] = desc
        entry["schema"] = _schema(schema, where, closed=True)
        entry["required"] = required
        out.append(entry)
    return out


class Toolkit:
    """A set of functions served as one OpenTool plugin.

        tk = Toolkit(title="pyecho", version="1.0.0")

        @tk.function(description="Echo text.",
                     parameters={"text": {"type": "string", "required": True}})
        def echo(ctx, text):
            return {"echo": text}

        @tk.stream(description="Count to n.")
        def count(ctx, n: int):
            for i in range(n):
                yield {"i": i}

        serve(tk)

    Every function takes the call's Context first, then its arguments by
    name (an optional parameter the call leaves out takes the Python
    default). A function returns a dict (the JSON object result; None is
    {}); a stream function yields dicts, one data event each.
    """

    def __init__(self, title, version, description=""):
        self.info = {"title": title, "version": version}
        if description:
            self.info["description"] = description
        self._fns = {}
        self._lock = threading.Lock()

    def function(self, description="", parameters=None, returns=None, name=None, additional_parameters=False):
        """Decorator adding a unary function (one result)."""
        return self._decorator(description, parameters, returns, name, False, additional_parameters)

    def stream(self, description="", parameters=None, returns=None, name=None, additional_parameters=False):
        """Decorator adding a streaming function: a generator (or any function
        returning an iterable) whose items are sent one data event each;
        returns= describes one item."""
        return self._decorator(description, parameters, returns, name, True, additional_parameters)

    def _decorator(self, description, parameters, returns, name, stream, additional_parameters):
        def add(fn):
            n = name or fn.__name__
            if not NAME_RE.match(n):
                raise ValueError("function name %r does not match ^[a-zA-Z0-9_-]{1,64}$" % n)
            desc = description or inspect.getdoc(fn) or ""
            if not desc:
                raise ValueError("function %s needs a description" % n)
            f = Function(fn, n, desc, parameters, returns, stream, additional_parameters)
            with self._lock:
                if n in self._fns:
                    raise ValueError("function %s is defined twice" % n)
                self._fns[n] = f
            return fn

        return add

    def get(self, name):
        with self._lock:
            return self._fns.get(name)

    def document(self):
        """The OpenTool 1.1.0 document, as a dict."""
        with self._lock:
            fns = [f.entry for f in self._fns.values()]
        return {"opentool": "1.1.0", "info": dict(self.info), "functions": fns}

    def document_json(self):
        return encode(self.document())


def encode(obj):
    """JSON bytes of obj (UTF-8, compact); ValueError/TypeError when it is
    not JSON (NaN, a set, an object)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
