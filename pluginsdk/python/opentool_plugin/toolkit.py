"""Toolkit: OpenTool functions declared with decorators.

A Toolkit collects plain Python functions, builds the OpenTool 1.1.0 document
the host asks for with Load (plus the OpenTool 2.0 "stream" field for
generator functions), and runs one call by name (see server.py for the wire).
"""

import inspect
import json
import math
import re
import threading

from .content import LOG_LEVELS
from .errors import ToolError

__all__ = ["Toolkit", "ToolError", "RPCError", "Context", "Function"]

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_SCHEMA_TYPES = ("boolean", "integer", "number", "string", "array", "object")

# Python annotations understood when a function gives no parameters= dict.
_ANNOTATION_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


class RPCError(Exception):
    """A JSON-RPC error answering a request to the client (ctx.request,
    ctx.elicit, ctx.create_message, ctx.list_roots): the client's own, or
    the host's when no client can answer (code -32601: an OpenTool caller,
    an MCP client without the capability, a stateless /mcp request, a
    host of plugin protocol 2)."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = int(code)
        self.message = str(message)
        self.data = data

    def __str__(self):
        return "%s (JSON-RPC error %d)" % (self.message, self.code)


# JSON-RPC's "method not found": nobody can answer a request.
METHOD_NOT_FOUND = -32601


class Context:
    """What a running call knows about itself, and how it talks to its caller.

    ``cancelled()`` is true once the host sent cancel for this call (its
    caller went away or its deadline passed) or the call's stream broke.
    ``wait(timeout)`` sleeps up to timeout seconds and returns early, True,
    when the call is cancelled: use it instead of time.sleep in long work.
    The host kills a plugin that does not end a cancelled call within its
    grace period (500 ms), so long calls should check.

    During the call (plugin protocol 3; with a host of protocol 2 they do
    nothing and return False): ``progress(progress, total, message)``
    reports progress to an MCP caller that asked for it
    (notifications/progress) and to /opentool/streamCall;
    ``log(level, data, logger)`` sends a log message to an MCP caller
    (notifications/message, filtered by its logging/setLevel). ``meta``
    is the _meta of the MCP caller's tools/call ({} for none).
    ``elicit``, ``create_message``, ``list_roots`` and ``request`` ask the
    MCP client that made the call and wait for its answer (RPCError when
    no client can answer).
    """

    def __init__(self, name="", traceparent="", meta=None, peer=None):
        self.name = name
        # The caller's W3C trace context ("00-TRACEID-SPANID-FLAGS", the
        # host's execute_tool span), or "": hand it to your own
        # OpenTelemetry setup so your spans join the caller's trace.
        self.traceparent = traceparent
        # The _meta of the MCP request that made the call (progressToken,
        # trace context, the client's own keys); {} when the caller is not
        # an MCP client, sent none, or the host speaks protocol 2.
        self.meta = dict(meta) if isinstance(meta, dict) else {}
        # The call's side of the messages to its caller (server.py's
        # _Peer: notify(method, params) -> bool, request(method, params,
        # timeout) -> dict); None: nobody to send to.
        self._peer = peer
        self._event = threading.Event()
        self._on_cancel = []
        self._lock = threading.Lock()

    def cancelled(self):
        return self._event.is_set()

    def wait(self, timeout=None):
        return self._event.wait(timeout)

    def cancel(self):
        """Mark the call cancelled (the SDK does this; tests may too)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            hooks, self._on_cancel = self._on_cancel, []
        for h in hooks:
            h()

    def _when_cancelled(self, hook):
        """Runs hook at cancel (at once when already cancelled)."""
        with self._lock:
            if not self._event.is_set():
                self._on_cancel.append(hook)
                return
        hook()

    @property
    def event(self):
        """The threading.Event set when the call is cancelled."""
        return self._event

    def notify(self, method, params=None):
        """Sends MCP notification method with params (a dict, None for
        none) to the caller; progress() and log() are the usual ones (the
        host relays notifications/progress and notifications/message and
        drops others). Returns True when it was sent, False when there is
        nobody to send it to (a host of protocol 2, or the call is over).
        Raises TypeError or ValueError when params is not a JSON object."""
        if params is not None and not isinstance(params, dict):
            raise TypeError("notify %s: params must be a dict, got %s" % (method, type(params).__name__))
        if self._peer is None:
            return False
        return self._peer.notify(method, params)

    def progress(self, progress, total=None, message=None):
        """Reports the call's progress (MCP "Utilities: Progress"):
        progress so far, total when known, a message. An MCP caller gets
        notifications/progress with its own progress token; one that asked
        for no progress (no progressToken in its _meta) gets nothing, and
        neither does an OpenTool caller of /opentool/call;
        /opentool/streamCall gets event:progress frames. Returns True when
        it was sent. Raises TypeError for a progress or total that is not
        a number."""
        _number("progress", progress)
        if total is not None:
            _number("total", total)
        if message is not None and not isinstance(message, str):
            raise TypeError("progress: message must be a str")
        token = self.meta.get("progressToken")
        if token is None:
            return False
        params = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self.notify("notifications/progress", params)

    def log(self, level, data, logger=None):
        """Sends a log message to an MCP caller (MCP "Server Utilities:
        Logging", notifications/message): level one of debug, info,
        notice, warning, error, critical, alert, emergency; data any JSON
        value; logger a name (optional). The host forwards it when level
        is at or above the one the client set with logging/setLevel.
        Returns True when it was sent. Raises ValueError for another
        level."""
        if level not in LOG_LEVELS:
            raise ValueError("log level %r is not one of MCP's: %s" % (level, ", ".join(LOG_LEVELS)))
        if logger is not None and not isinstance(logger, str):
            raise TypeError("log: logger must be a str")
        params = {"level": level}
        if logger:
            params["logger"] = logger
        params["data"] = data
        return self.notify("notifications/message", params)

    def request(self, method, params=None, timeout=None):
        """Sends MCP request method (sampling/createMessage,
        elicitation/create or roots/list, MCP "Client Features") with
        params (a dict) to the MCP client that made the call, waits for its
        answer and returns the result, a dict. Raises RPCError: the
        client's JSON-RPC error, or the host's with code -32601 when no
        client can answer (an OpenTool caller, a client without the
        capability, a stateless /mcp request, a host of protocol 2, the
        call cancelled or over); TimeoutError after timeout seconds (None:
        wait until the call ends)."""
        if params is not None and not isinstance(params, dict):
            raise TypeError("request %s: params must be a dict, got %s" % (method, type(params).__name__))
        if self._peer is None:
            raise RPCError(METHOD_NOT_FOUND, "no caller can answer this request")
        return self._peer.request(method, params, timeout)

    def elicit(self, message, requested_schema, timeout=None):
        """Asks the MCP client's user for input (elicitation/create):
        message, and requested_schema, a JSON Schema of a flat object.
        Returns the client's answer: {"action": "accept" | "decline" |
        "cancel", "content": {...}}. Raises as request()."""
        return self.request("elicitation/create", {"message": message, "requestedSchema": requested_schema}, timeout)

    def create_message(self, messages, max_tokens, timeout=None, **params):
        """Asks the MCP client for a completion from its model
        (sampling/createMessage). messages: a list of {"role", "content"}
        dicts (a str is a user message of that text); max_tokens; params:
        more of MCP's members as they are (systemPrompt, modelPreferences,
        temperature, ...). Returns the client's result: {"role", "content",
        "model", "stopReason"}. Raises as request()."""
        msgs = [{"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else m for m in messages]
        return self.request("sampling/createMessage", dict(params, messages=msgs, maxTokens=max_tokens), timeout)

    def list_roots(self, timeout=None):
        """Asks the MCP client for its roots (roots/list). Returns the
        client's result: {"roots": [{"uri", "name"}, ...]}. Raises as
        request()."""
        return self.request("roots/list", {}, timeout)


def _number(what, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        raise TypeError("progress: %s must be a finite number, got %r" % (what, v))


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
