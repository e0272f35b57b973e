"""serve(): run a Toolkit as an opentool-host plugin.

The wire is hashicorp/go-plugin's gRPC protocol with the application service
opentool.plugin.v2.Tool (docs/plugin-protocol.md). This module mirrors the
Go SDK (pluginsdk/serve.go, server.go, mcp.go, guard_unix.go): the host
authenticated with go-plugin's AutoMTLS (mtls.py), the handshake on stdout,
Health, Tool (Load, Invoke, Watch), go-plugin's GRPCController
and GRPCStdio, SIGTERM and parent death ending the whole process group.

Plugin protocol 3 (section 5b) when the host offers it, else 2, as go-plugin
negotiates: under 3 a unary function's Result travels as an MCP result
(InvokeEvent.mcp_result) and the call's messages (ctx.progress, ctx.log)
as InvokeEvent.message, on the call's own stream and in the order they
were made; under 2 a Result travels as its projection and messages are
dropped.
"""

import collections
import json
import os
import signal
import sys
import tempfile
import threading
import traceback
from concurrent import futures

import grpc

from .pb import grpc_controller_pb2, grpc_controller_pb2_grpc
from .pb import grpc_stdio_pb2_grpc
from .pb import tool_pb2, tool_pb2_grpc
from . import refusals, strict
from .content import Result
from .toolkit import METHOD_NOT_FOUND, Context, RPCError, ToolError, encode

try:  # grpcio's own health service, when installed (python3-grpcio has none)
    from grpc_health.v1 import health_pb2, health_pb2_grpc  # type: ignore
except ImportError:  # pragma: no cover - depends on the system
    from .pb import health_pb2, health_pb2_grpc

__all__ = ["serve", "MAGIC_COOKIE_KEY", "MAGIC_COOKIE_VALUE", "PROTOCOL_VERSION", "PROTOCOL_VERSIONS"]

MAGIC_COOKIE_KEY = "OPENTOOL_PLUGIN"
MAGIC_COOKIE_VALUE = "4c6d2b0a-opentool-host-plugin"
CORE_PROTOCOL_VERSION = 1  # go-plugin's
# The application protocol versions this SDK speaks (tool.proto: 2, the
# Invoke stream; 3, 2 plus MCP results and a call's messages), oldest first,
# and the newest. serve() answers the highest the host offers in
# PLUGIN_PROTOCOL_VERSIONS, as go-plugin does.
PROTOCOL_VERSIONS = (2, 3)
PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
# How many events of one call may wait for the host before the function
# blocks (a stream's items, its messages).
OUTBOX_SIZE = 64
MAX_MESSAGE_SIZE = 64 << 20  # as internal/wire.MaxMessageSize
PARENT_WATCH_INTERVAL = 0.2  # seconds, as the Go SDK


def log(level, msg):
    """Writes one "[LEVEL] msg" line to stderr (go-plugin logs it at that
    level under the plugin's name). Never raises: when the host is gone
    stderr may be a broken pipe."""
    try:
        sys.stderr.write("[%s] %s\n" % (level, msg))
        sys.stderr.flush()
    except Exception:
        pass


class _Exit:
    """How the process ends: remove the socket, kill the process group when
    the plugin leads it (the host gives each plugin its own group), exit."""

    sock = None

    @classmethod
    def now(cls, code=2, group=True):
        if cls.sock:
            try:
                os.unlink(cls.sock)
            except OSError:
                pass
        if group:
            try:
                if os.getpgrp() == os.getpid():
                    os.killpg(0, signal.SIGKILL)  # ourselves included
            except OSError:
                pass
        os._exit(code)


def _error_event(code, message):
    return tool_pb2.InvokeEvent(error=tool_pb2.ToolError(code=int(code), message=str(message)))


def _encode_result(name, value):
    if value is None:
        return b"{}"
    if isinstance(value, Result):
        raise ToolError(500, "function %s: a stream item must be a dict; a Result is for unary functions" % name)
    if not isinstance(value, dict):
        raise ToolError(500, "function %s returned %s; a result must be a dict (a JSON object) or a Result" % (name, type(value).__name__))
    try:
        return encode(value)
    except (TypeError, ValueError) as e:
        raise ToolError(500, "encode result of %s: %s" % (name, e))


def _result_event(name, value, v3):
    """The InvokeEvent of a unary function's return value: a Result as an
    MCP result (protocol 3) or as its projection (2); a dict as it is."""
    if not isinstance(value, Result):
        return tool_pb2.InvokeEvent(data=_encode_result(name, value))
    try:
        if v3:
            return tool_pb2.InvokeEvent(mcp_result=encode(value.to_dict()))
        return tool_pb2.InvokeEvent(data=encode(value.project()))
    except (TypeError, ValueError) as e:
        raise ToolError(500, "encode result of %s: %s" % (name, e))


class _Outbox:
    """The events of one call on their way to the host, in order: the
    worker thread running the function puts, the gRPC thread answering
    Invoke takes. At most OUTBOX_SIZE wait; put blocks beyond them (a
    stream's backpressure) until the host takes one or the call is over."""

    def __init__(self, size=OUTBOX_SIZE):
        self._q = collections.deque()
        self._cv = threading.Condition()
        self._size = size
        self._finished = False  # the worker put its last event
        self._closed = False  # the Invoke stream is over: nothing more goes out

    def put(self, ev):
        """Queues ev; False when the call is over (ev is dropped)."""
        with self._cv:
            while len(self._q) >= self._size and not self._closed:
                self._cv.wait()
            if self._closed or self._finished:
                return False
            self._q.append(ev)
            self._cv.notify_all()
            return True

    def get(self):
        """The next event, waiting for it; None after the last one."""
        with self._cv:
            while not self._q and not self._finished and not self._closed:
                self._cv.wait()
            if not self._q:
                return None
            ev = self._q.popleft()
            self._cv.notify_all()
            return ev

    def finish(self):
        """No more events: get returns None once the queue is empty."""
        with self._cv:
            self._finished = True
            self._cv.notify_all()

    def close(self):
        """The stream is over: puts fail from now on and waiting ones
        return."""
        with self._cv:
            self._closed = True
            self._q.clear()
            self._cv.notify_all()


class _Peer:
    """The plugin's side of one call's messages to its caller (protocol 3;
    Go's wire.Peer): notifications and requests out through the call's
    outbox, replies from the host matched to the requests waiting for
    them. Under protocol 2 notifications are dropped and requests fail
    with RPCError -32601."""

    def __init__(self, out, v3):
        self._out = out
        self.v3 = v3
        self._lock = threading.Lock()
        self._next = 0  # the last request id issued
        self._pending = {}  # id -> [threading.Event, reply or None]
        self._closed = False

    def notify(self, method, params):
        if not self.v3:
            return False
        body = b"" if params is None else encode(params)
        return self._out.put(tool_pb2.InvokeEvent(message=tool_pb2.Message(method=method, params=body)))

    def request(self, method, params, timeout=None):
        """Sends request method to the caller and returns its result (a
        dict) once the host relays the answer. Raises RPCError: the
        caller's error, or -32601 under protocol 2 or when the call ends
        (or is cancelled) first; TimeoutError after timeout seconds."""
        if not self.v3:
            raise RPCError(METHOD_NOT_FOUND, "no caller can answer this request: the host speaks plugin protocol 2")
        body = b"" if params is None else encode(params)
        slot = [threading.Event(), None]
        with self._lock:
            if self._closed:
                raise RPCError(METHOD_NOT_FOUND, "no caller can answer this request: the call is over")
            self._next += 1
            rid = self._next
            self._pending[rid] = slot
        try:
            if not self._out.put(tool_pb2.InvokeEvent(message=tool_pb2.Message(id=rid, method=method, params=body))):
                raise RPCError(METHOD_NOT_FOUND, "no caller can answer this request: the call is over")
            if not slot[0].wait(timeout):
                raise TimeoutError("%s: no answer within %s s" % (method, timeout))
        finally:
            with self._lock:
                self._pending.pop(rid, None)
        reply = slot[1]
        if reply is None:
            raise RPCError(METHOD_NOT_FOUND, "no caller can answer this request: the call ended before the answer came")
        if reply.HasField("error"):
            data = None
            if reply.error.data:
                try:
                    data = json.loads(reply.error.data.decode("utf-8"))
                except (ValueError, UnicodeDecodeError):
                    data = None
            raise RPCError(reply.error.code, reply.error.message, data)
        try:
            result = json.loads(reply.result.decode("utf-8")) if reply.result else {}
        except (ValueError, UnicodeDecodeError) as e:
            raise RPCError(-32603, "the caller's result is not JSON: %s" % e)
        return result

    def deliver(self, reply):
        """Hands the host's reply to the request waiting for it. Returns
        False for a reply to a request never sent (the host is confused); a
        late reply to a request whose waiter gave up is dropped."""
        with self._lock:
            slot = self._pending.get(reply.id)
            issued = 0 < reply.id <= self._next
        if slot is None:
            return issued
        slot[1] = reply
        slot[0].set()
        return True

    def close(self):
        """Fails the requests still waiting; later requests fail at once."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot[0].set()


def _watch_requests(requests, ctx, peer):
    """Reads the rest of the Invoke request stream: cancel (or a broken
    stream) cancels the call; replies go to the peer; a half-close (EOF)
    alone does not cancel."""
    try:
        for m in requests:
            kind = m.WhichOneof("msg")
            if kind == "reply":
                if not peer.deliver(m.reply):
                    ctx.cancel()  # a reply to nothing
                    return
                continue
            if kind == "cancel":
                ctx.cancel()
                return
    except Exception:
        ctx.cancel()


def _meta_of(call, v3):
    """The caller's _meta the call carries (protocol 3), a dict; {} for none."""
    if not v3 or not call.meta:
        return {}
    try:
        m = json.loads(call.meta.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return m if isinstance(m, dict) else {}


class _ToolServicer(tool_pb2_grpc.ToolServicer):
    def __init__(self, toolkit, v3=False):
        self.tk = toolkit
        self.v3 = v3  # the host speaks plugin protocol 3

    def Load(self, request, context):
        try:
            return tool_pb2.LoadResponse(document=self.tk.document_json())
        except Exception as e:
            log("ERROR", "Load: %s" % e)
            return tool_pb2.LoadResponse(error=tool_pb2.ToolError(code=500, message="Load: %s" % e))

    def Watch(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "the tool's document does not change")

    def Catalog(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "the plugin serves no MCP catalog")

    def Request(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "the plugin serves no MCP catalog")

    def Invoke(self, request_iterator, context):
        try:
            first = next(request_iterator)
        except (StopIteration, grpc.RpcError):
            return
        if first.WhichOneof("msg") != "call":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message of Invoke must be a call")
        call = first.call
        md = dict(context.invocation_metadata() or ())
        out = _Outbox()
        peer = _Peer(out, self.v3)
        ctx = Context(call.name, traceparent=md.get("traceparent", ""), meta=_meta_of(call, self.v3), peer=peer)
        ctx._when_cancelled(peer.close)  # requests waiting fail at cancel

        def ended():  # the RPC ended or broke: nothing more goes out
            ctx.cancel()
            out.close()
        if not context.add_callback(ended):
            ended()
        threading.Thread(target=_watch_requests, args=(request_iterator, ctx, peer), daemon=True,
                         name="requests-" + call.name).start()
        # The function runs in a thread of its own so that what it sends
        # during the call (ctx.progress, ctx.log, a stream's items) goes
        # out while it runs; this thread hands the events to gRPC.
        threading.Thread(target=self._work, args=(call, ctx, out), daemon=True,
                         name="call-" + call.name).start()
        try:
            while True:
                ev = out.get()
                if ev is None:
                    return
                yield ev
        finally:
            out.close()
            peer.close()

    def _work(self, call, ctx, out):
        """Runs the call, putting its events in out, then finishes out."""
        events = self._run(call, ctx)
        try:
            for ev in events:
                if not out.put(ev):
                    return  # the stream is over
        except ToolError as e:
            out.put(_error_event(e.code, e.message))
        except Exception as e:
            # One ERROR line the host shows in /health, the traceback at DEBUG.
            log("ERROR", "function %s failed: %s: %s" % (call.name, type(e).__name__, e))
            for line in traceback.format_exc().rstrip().splitlines():
                log("DEBUG", line)
            out.put(_error_event(500, str(e) or type(e).__name__))
        finally:
            try:
                events.close()  # a stream's generator runs its finally blocks
            except Exception as e:
                log("ERROR", "function %s: closing its stream failed: %s: %s" % (call.name, type(e).__name__, e))
            out.finish()

    def _run(self, call, ctx):
        f = self.tk.get(call.name)
        if f is None:
            raise ToolError(404, "function %r not found" % call.name)
        if call.stream and not f.stream:
            raise ToolError(404, "function %r does not stream" % call.name)
        if not call.stream and f.stream:
            raise ToolError(404, "function %r streams: call it with streamCall" % call.name)
        # The SDKs' shared argument strictness (strict.py): 400 naming
        # the first fault, else the arguments as Python values.
        args = strict.arguments(f, call.arguments)
        try:
            bound = f.signature.bind(ctx, **args)
        except TypeError as e:
            raise ToolError(400, "invalid arguments for %s: %s" % (call.name, e))
        if not f.stream:
            yield _result_event(call.name, f.fn(*bound.args, **bound.kwargs), self.v3)
            return
        it = iter(f.fn(*bound.args, **bound.kwargs))
        try:
            for item in it:
                yield tool_pb2.InvokeEvent(data=_encode_result(call.name, item))
                if ctx.cancelled():
                    return
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()


class _HealthServicer(health_pb2_grpc.HealthServicer):
    def Check(self, request, context):
        if request.service in ("", "plugin"):
            return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
        context.abort(grpc.StatusCode.NOT_FOUND, "unknown service %r" % request.service)


class _ControllerServicer(grpc_controller_pb2_grpc.GRPCControllerServicer):
    def __init__(self, stop):
        self.stop = stop

    def Shutdown(self, request, context):
        # Exit once the answer is sent (the RPC's termination callback).
        if not context.add_callback(self.stop.set):
            self.stop.set()
        return grpc_controller_pb2.Empty()


class _StdioServicer(grpc_stdio_pb2_grpc.GRPCStdioServicer):
    """go-plugin's client opens this stream at connect and warns when it is
    missing. The plugin's stderr already reaches the host directly, so the
    stream stays open and silent until the connection ends."""

    def StreamStdio(self, request, context):
        done = threading.Event()
        if context.add_callback(done.set):
            done.wait()
        return
        yield  # a generator: a server-streaming handler


def negotiate(offered):
    """The application protocol version to answer, as go-plugin picks it:
    the highest of PROTOCOL_VERSIONS that offered (PLUGIN_PROTOCOL_VERSIONS,
    comma-separated) names, else the oldest. When the host offers versions
    and none of ours, that is logged (the host then refuses the handshake
    with an error naming both sides)."""
    versions = [v.strip() for v in offered.split(",") if v.strip()]
    for v in reversed(PROTOCOL_VERSIONS):
        if str(v) in versions:
            return v
    if versions:
        log("ERROR", "the host speaks plugin protocol %s; this SDK speaks %s"
            % (",".join(versions), ",".join(str(v) for v in PROTOCOL_VERSIONS)))
    return PROTOCOL_VERSIONS[0]


def _socket_path():
    d = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="plugin", suffix=".sock", dir=d)
    os.close(fd)
    os.unlink(path)
    return path


def _authenticate_host():
    """The server credentials that admit only the host (go-plugin's
    AutoMTLS, mtls.py) and the handshake line's certificate field. Without
    them the plugin does not serve: it logs why and exits 1 (never an
    insecure port)."""
    try:
        from . import mtls
    except ImportError as e:
        log("ERROR", "cannot authenticate the host: %s (the Python SDK needs the cryptography package: "
            "run `make deps-python`, which installs python3-cryptography)" % e)
        sys.exit(1)
    try:
        return mtls.server_credentials(os.environ.get(mtls.CLIENT_CERT_ENV, ""))
    except mtls.NoHostCertificate as e:
        log("ERROR", "not serving: %s" % e)
        sys.exit(1)


def serve(toolkit, max_workers=128, argv=None):
    """Runs toolkit as an opentool-host plugin; never returns.

    Checks the host's magic cookie (without it prints a notice to stderr and
    exits 1; run with --document it prints the OpenTool document instead, for
    `opentool-host validate`), authenticates the host with go-plugin's
    AutoMTLS (mtls.py: without the host's certificate in PLUGIN_CLIENT_CERT
    it logs why and exits 1; a connection that does not authenticate as
    the host is refused in the TLS handshake and logged, refusals.py),
    serves gRPC over TLS on a unix socket in
    PLUGIN_UNIX_SOCKET_DIR with max_workers threads (concurrent calls; each
    call's function runs in one more thread of its own), prints the go-plugin
    handshake line ("1|V|unix|PATH|grpc|CERT", V the protocol version
    negotiate() picks: 3, or 2 with a host that offers only 2; CERT the
    plugin's certificate, DER in base64 without padding) to stdout and then points
    stdout (sys.stdout and file descriptor 1) at stderr. SIGTERM, the host's Shutdown, the host's
    death (the parent pid changes) end the process; SIGTERM and parent death
    also kill its process group (processes the plugin started).
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--document"]:
        sys.stdout.write(json.dumps(toolkit.document(), indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        sys.exit(0)
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write(
            "This binary is a plugin. These are not meant to be executed directly.\n"
            "Please execute the program that consumes these plugins, which will\n"
            "load any plugins automatically (opentool-host run --dir DIR).\n"
            "Run it with --document to print its OpenTool document.\n")
        sys.exit(1)

    creds, server_cert = _authenticate_host()
    version = negotiate(os.environ.get("PLUGIN_PROTOCOL_VERSIONS", ""))
    # gRPC's core reports a refused connection only on descriptor 2:
    # refusals.watch() logs each as the other SDKs do.
    real_stderr = refusals.watch()

    ppid = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: _Exit.now(2))

    stop = threading.Event()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="opentool-rpc"),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
            ("grpc.max_send_message_length", MAX_MESSAGE_SIZE),
            ("grpc.so_reuseport", 0),
        ],
    )
    health_pb2_grpc.add_HealthServicer_to_server(_HealthServicer(), server)
    tool_pb2_grpc.add_ToolServicer_to_server(_ToolServicer(toolkit, v3=version >= 3), server)
    grpc_controller_pb2_grpc.add_GRPCControllerServicer_to_server(_ControllerServicer(stop), server)
    grpc_stdio_pb2_grpc.add_GRPCStdioServicer_to_server(_StdioServicer(), server)

    path = _socket_path()
    _Exit.sock = path
    if server.add_secure_port("unix:" + path, creds) == 0:
        log("ERROR", "cannot listen on unix:%s" % path)
        sys.exit(1)
    server.start()

    sys.stdout.write("%d|%d|unix|%s|grpc|%s\n" % (CORE_PROTOCOL_VERSION, version, path, server_cert))
    sys.stdout.flush()
    # Nothing else may reach the handshake pipe: Python's and C's stdout
    # both go to stderr from here on.
    sys.stdout = sys.stderr
    try:
        os.dup2(real_stderr, 1)
    except OSError:
        pass

    # The main thread watches the parent (the host) and waits for Shutdown;
    # it also runs the SIGTERM handler.
    while not stop.wait(PARENT_WATCH_INTERVAL):
        if ppid > 1 and os.getppid() != ppid:
            _Exit.now(2)  # the host died: no logging (stderr may be broken)
    server.stop(0.5)
    try:
        sys.stderr.flush()
    except Exception:
        pass
    _Exit.now(0, group=False)  # the host kills what is left of the group
