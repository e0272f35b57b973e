"""Tests of the Python SDK with the standard library's unittest
(python3 -m unittest discover -s tests, in pluginsdk/python; the Go test
TestPythonSDKUnitTests runs them in make test). The protocol tests start
the example plugin as the host would (magic cookie, socket folder, the
protocol versions the host offers, its certificate for AutoMTLS), read the
handshake line and talk gRPC over mTLS to it with the SDK's own stubs."""

import base64
import json
import os
import queue
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
EXAMPLE = os.path.join(SDK, "..", "..", "plugins", "opentool-plugin-pyecho")
sys.path.insert(0, SDK)

import grpc  # noqa: E402

from opentool_plugin import mtls, refusals  # noqa: E402
from opentool_plugin import (  # noqa: E402
    Context, Result, RPCError, ToolError, audio, embedded_resource, image, resource_link, text)
from opentool_plugin.pb import tool_pb2, tool_pb2_grpc  # noqa: E402
from opentool_plugin.server import PROTOCOL_VERSIONS, _Outbox, _Peer as _SDKPeer, negotiate  # noqa: E402

PNG = b"\x89PNG"
# The example's picture: a 1x1 orange PNG.
DOT_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP438EAAAQRAYhPXesHAAAAAElFTkSuQmCC"


class ContentTest(unittest.TestCase):
    def test_blocks(self):
        self.assertEqual(text("hi"), {"type": "text", "text": "hi"})
        self.assertEqual(text("hi", annotations={"audience": ["user"]}, meta={"k": 1}),
                         {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}, "_meta": {"k": 1}})
        self.assertEqual(image(PNG, "image/png"), {"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
        self.assertEqual(image(bytearray(b"\x01\x02\x03"), "image/gif")["data"], "AQID")
        self.assertEqual(image("iVBORw==", "image/png")["data"], "iVBORw==")
        self.assertEqual(audio(PNG, "audio/wav"), {"type": "audio", "data": "iVBORw==", "mimeType": "audio/wav"})
        self.assertEqual(resource_link("file:///a", "a", mime_type="text/plain"),
                         {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"})
        self.assertEqual(embedded_resource("file:///a", text="A", mime_type="text/plain"),
                         {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "A"}})
        self.assertEqual(embedded_resource("file:///b", blob=PNG),
                         {"type": "resource", "resource": {"uri": "file:///b", "blob": "iVBORw=="}})
        with self.assertRaisesRegex(ValueError, "standard base64"):
            image("not base64!", "image/png")
        with self.assertRaisesRegex(ValueError, "mime_type"):
            image(PNG, "")
        with self.assertRaisesRegex(TypeError, "must be bytes"):
            image(42, "image/png")
        with self.assertRaisesRegex(ValueError, "exactly one of text and blob"):
            embedded_resource("x")
        with self.assertRaisesRegex(ValueError, r"content\[0\] is not a content block"):
            Result([{"type": "video"}])

    def test_result_and_projection(self):
        r = Result(["a", image(PNG, "image/png"), text("b")])
        blocks = [{"type": "text", "text": "a"}, {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
                  {"type": "text", "text": "b"}]
        self.assertEqual(r.to_dict(), {"content": blocks})
        self.assertEqual(r.project(), {"content": blocks, "text": "a\nb"})
        self.assertEqual(Result().project(), {"content": [], "text": ""})
        self.assertEqual(Result(['{"n":1}'], structured_content={"n": 1}).project(), {"n": 1})
        self.assertEqual(Result(structured_content=[1, 2]).project(), {"result": [1, 2]})
        self.assertEqual(Result("no", is_error=True, meta={"m": True}).to_dict(),
                         {"content": [{"type": "text", "text": "no"}], "isError": True, "_meta": {"m": True}})
        with self.assertRaises(ToolError) as cm:
            Result(["no", "way"], is_error=True).project()
        self.assertEqual((cm.exception.code, cm.exception.message), (500, "no\nway"))
        with self.assertRaises(ToolError) as cm:
            Result(is_error=True).project()
        self.assertEqual(cm.exception.message, "the MCP tool reported an error without text")


class _Peer:
    def __init__(self):
        self.sent = []

    def notify(self, method, params):
        self.sent.append((method, params))
        return True


class ContextTest(unittest.TestCase):
    def test_progress_and_log(self):
        peer = _Peer()
        ctx = Context("f", meta={"progressToken": "tok"}, peer=peer)
        self.assertTrue(ctx.progress(1, 4, "one"))
        self.assertTrue(ctx.progress(2.5))
        self.assertTrue(ctx.log("warning", {"disk": "full"}, logger="fs"))
        self.assertTrue(ctx.log("debug", "x"))
        self.assertEqual(peer.sent, [
            ("notifications/progress", {"progressToken": "tok", "progress": 1, "total": 4, "message": "one"}),
            ("notifications/progress", {"progressToken": "tok", "progress": 2.5}),
            ("notifications/message", {"level": "warning", "logger": "fs", "data": {"disk": "full"}}),
            ("notifications/message", {"level": "debug", "data": "x"}),
        ])
        with self.assertRaisesRegex(ValueError, "not one of MCP's"):
            ctx.log("verbose", "x")
        for bad in ("1", True, float("nan")):
            with self.assertRaisesRegex(TypeError, "finite number"):
                ctx.progress(bad)
        with self.assertRaisesRegex(TypeError, "params must be a dict"):
            ctx.notify("x", [1])

        peer.sent.clear()
        no_token = Context("f", peer=peer)
        self.assertFalse(no_token.progress(1, 2), "no progress token: no progress")
        self.assertTrue(no_token.log("info", "still logged"))
        self.assertEqual(len(peer.sent), 1)
        alone = Context("f", meta={"progressToken": 1})
        self.assertFalse(alone.progress(1))
        self.assertFalse(alone.log("info", "x"))
        self.assertEqual(Context("f").meta, {})

    def test_requests(self):
        out = _Outbox()
        peer = _SDKPeer(out, True)
        ctx = Context("f", peer=peer)
        ctx._when_cancelled(peer.close)
        answer = []
        t = threading.Thread(target=lambda: answer.append(ctx.list_roots()))
        t.start()
        ev = out.get()
        self.assertEqual((ev.message.id, ev.message.method, json.loads(ev.message.params)), (1, "roots/list", {}))
        self.assertFalse(peer.deliver(tool_pb2.Reply(id=7)), "a reply to a request never sent")
        self.assertTrue(peer.deliver(tool_pb2.Reply(id=1, result=b'{"roots":[{"uri":"file:///r"}]}')))
        t.join(2)
        self.assertEqual(answer, [{"roots": [{"uri": "file:///r"}]}])
        self.assertTrue(peer.deliver(tool_pb2.Reply(id=1)), "a late reply is dropped")
        # sampling/createMessage's params; cancel fails the request waiting.
        threading.Timer(0.05, ctx.cancel).start()
        with self.assertRaises(RPCError) as cm:
            ctx.create_message(["hi"], 10, systemPrompt="be brief")
        self.assertEqual(cm.exception.code, -32601)
        ev = out.get()
        self.assertEqual(json.loads(ev.message.params), {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10, "systemPrompt": "be brief"})
        with self.assertRaisesRegex(RPCError, "the call is over"):
            ctx.elicit("q", {})
        # A host of protocol 2, or no peer: nobody can answer.
        with self.assertRaisesRegex(RPCError, "plugin protocol 2"):
            Context("f", peer=_SDKPeer(_Outbox(), False)).elicit("q", {})
        with self.assertRaises(RPCError):
            Context("f").list_roots()
        with self.assertRaises(TimeoutError):
            Context("f", peer=_SDKPeer(_Outbox(), True)).request("roots/list", timeout=0.01)

    def test_negotiate(self):
        self.assertEqual(PROTOCOL_VERSIONS, (2, 3))
        self.assertEqual(negotiate("2,3"), 3)
        self.assertEqual(negotiate("3, 2"), 3)
        self.assertEqual(negotiate("2"), 2)
        self.assertEqual(negotiate("3"), 3)
        self.assertEqual(negotiate(""), 2)

    def test_outbox_order_bound_and_close(self):
        out = _Outbox(size=2)
        self.assertTrue(out.put(1))
        self.assertTrue(out.put(2))
        blocked = threading.Thread(target=out.put, args=(3,))
        blocked.start()
        blocked.join(0.05)
        self.assertTrue(blocked.is_alive(), "a full outbox makes put wait")
        self.assertEqual(out.get(), 1)
        blocked.join(2)
        self.assertFalse(blocked.is_alive())
        out.finish()
        self.assertEqual([out.get(), out.get(), out.get()], [2, 3, None])
        self.assertFalse(out.put(4), "nothing after finish")
        out = _Outbox(size=1)
        out.put(1)
        result = []
        waiting = threading.Thread(target=lambda: result.append(out.put(2)))
        waiting.start()
        out.close()
        waiting.join(2)
        self.assertEqual(result, [False], "close releases a waiting put")
        self.assertIsNone(out.get())


class _Example:
    """The example plugin run as the host would, offering versions."""

    def __init__(self, versions, stderr=subprocess.DEVNULL):
        self.dir = tempfile.mkdtemp(prefix="pysdk-test-")
        # The host's certificate and key, as go-plugin's AutoMTLS makes them.
        host_key, host_cert, _ = mtls._own_certificate()
        env = {
            "PLUGIN_CLIENT_CERT": host_cert.decode(),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "OPENTOOL_PLUGIN": "4c6d2b0a-opentool-host-plugin",
            "PLUGIN_PROTOCOL_VERSIONS": versions,
            "PLUGIN_UNIX_SOCKET_DIR": self.dir,
            "OPENTOOL_PYECHO_SDK": SDK,
        }
        self.proc = subprocess.Popen([sys.executable, EXAMPLE], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        line = self.proc.stdout.readline().decode().strip()
        if not line:
            self.close()
            raise AssertionError("the example printed no handshake line")
        self.handshake = line.split("|")
        self.cert_der = base64.b64decode(self.handshake[5] + "=" * (-len(self.handshake[5]) % 4))
        creds = grpc.ssl_channel_credentials(root_certificates=ssl.DER_cert_to_PEM_cert(self.cert_der).encode(),
                                             private_key=host_key, certificate_chain=host_cert)
        self.channel = grpc.secure_channel("unix:" + self.handshake[3], creds,
                                           options=[("grpc.ssl_target_name_override", "localhost")])
        self.tool = tool_pb2_grpc.ToolStub(self.channel)

    def invoke(self, name, args, meta=None, stream=False):
        """The events of one call, each as (kind, JSON value); messages as
        (method, params)."""
        call = tool_pb2.Call(name=name, arguments=json.dumps(args).encode(), stream=stream,
                             meta=json.dumps(meta).encode() if meta is not None else b"")
        out = []
        for ev in self.tool.Invoke(iter([tool_pb2.InvokeRequest(call=call)]), timeout=10):
            if ev.HasField("message"):
                out.append((ev.message.method, json.loads(ev.message.params or b"null")))
            elif ev.mcp_result:
                out.append(("mcp_result", json.loads(ev.mcp_result)))
            elif ev.HasField("error"):
                out.append(("error", (ev.error.code, ev.error.message)))
            else:
                out.append(("data", json.loads(ev.data)))
        return out

    def converse(self, question, reply):
        """One call of confirm as a host would: each request the plugin
        sends is answered with reply(message) (a tool_pb2.Reply; None:
        cancel the call). Returns the events as invoke does."""
        reqs = queue.Queue()
        reqs.put(tool_pb2.InvokeRequest(call=tool_pb2.Call(name="confirm", arguments=json.dumps({"question": question}).encode())))

        def requests():
            while True:
                r = reqs.get()
                if r is None:
                    return
                yield r

        out = []
        stream = self.tool.Invoke(requests(), timeout=10)
        try:
            for ev in stream:
                if ev.HasField("message"):
                    out.append((ev.message.method, ev.message.id, json.loads(ev.message.params or b"null")))
                    if ev.message.id:
                        r = reply(ev.message)
                        reqs.put(tool_pb2.InvokeRequest(cancel=tool_pb2.Cancel()) if r is None else tool_pb2.InvokeRequest(reply=r))
                elif ev.HasField("error"):
                    out.append(("error", (ev.error.code, ev.error.message)))
                else:
                    out.append(("data", json.loads(ev.data)))
        finally:
            reqs.put(None)
        return out

    def close(self):
        try:
            self.channel.close()
        except Exception:
            pass
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.proc.wait()
        self.proc.stdout.close()
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


BLOCKS = [{"type": "text", "text": "a dot"}, {"type": "image", "data": DOT_PNG, "mimeType": "image/png"}]


class HostCertificateTest(unittest.TestCase):
    """PLUGIN_CLIENT_CERT must be exactly one PEM certificate, else the
    plugin does not serve."""

    def test_refused(self):
        _, pem, _ = mtls._own_certificate()
        for value, want in [("", "is not set"), ("hello", "exactly one"),
                            (pem.decode() * 2, "exactly one"),
                            ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a PEM certificate")]:
            with self.assertRaises(mtls.NoHostCertificate) as cm:
                mtls.server_credentials(value)
            self.assertIn(want, str(cm.exception))

    def test_accepted(self):
        _, pem, _ = mtls._own_certificate()
        creds, field = mtls.server_credentials(pem.decode())
        self.assertIsInstance(creds, grpc.ServerCredentials)
        self.assertNotIn("=", field)


class RefusalFilterTest(unittest.TestCase):
    """gRPC core's line for a failed TLS handshake becomes the refusal
    line of the other SDKs, at most one per interval (a clock the test
    sets); every other line passes unchanged."""

    def test_lines(self):
        now = [100.0]
        f = refusals.Filter(clock=lambda: now[0], interval=1.0)
        core = (b"E1202 06:12:27.356810983    4313 ssl_transport_security.cc:1501]       "
                b"Handshake failed with fatal error SSL_ERROR_SSL: error:0A0000C7:SSL routines::peer did not return a certificate.\n")
        want = (b"[WARN] refused a connection that did not authenticate as the host: "
                b"SSL_ERROR_SSL: error:0A0000C7:SSL routines::peer did not return a certificate\n")
        for other in (b"[INFO] a plugin's own line\n", b"I1202 ev_epoll1_linux.cc:121] grpc epoll fd: 3\n", b"no newline"):
            self.assertEqual(f.line(other), other)
        self.assertEqual(f.line(core), want)
        now[0] += 0.5
        self.assertEqual(f.line(core), b"", "a second refusal within the interval is counted, not logged")
        self.assertEqual(f.line(core), b"")
        now[0] += 0.6
        self.assertEqual(f.line(core), want[:-1] + b" (and 2 more since the last such line)\n")
        now[0] += 1.0
        self.assertEqual(f.line(core), want)


class RefusalLogTest(unittest.TestCase):
    """A neighbour's connection to the example's socket (plaintext, TLS
    without a certificate, TLS with one of its own) is refused and
    logged on stderr as the Go and Node SDKs log it; gRPC core's own line
    for it is not passed on, and the plugin keeps serving. Before, the
    only trace was gRPC core's line, at a level the host does not read."""

    def test_refusals_logged(self):
        ex = _Example("2,3", stderr=subprocess.PIPE)
        self.addCleanup(ex.close)
        lines = queue.Queue()

        def read():
            for line in ex.proc.stderr:
                lines.put(line.decode("utf-8", "replace"))
            lines.put(None)
        threading.Thread(target=read, daemon=True).start()

        sock = ex.handshake[3]
        attacker_key, attacker_cert, _ = mtls._own_certificate()
        own = tempfile.NamedTemporaryFile(suffix=".pem")
        self.addCleanup(own.close)
        own.write(attacker_key + attacker_cert)
        own.flush()
        for name, cert in (("plaintext", None), ("no certificate", False), ("own certificate", own.name)):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(sock)
                if cert is None:
                    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                    s.recv(1)
                    continue
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
                if cert:
                    ctx.load_cert_chain(cert)
                with self.assertRaises((ssl.SSLError, OSError), msg=name):
                    with ctx.wrap_socket(s) as t:
                        t.sendall(b"x")
                        if not t.recv(1):
                            raise OSError("closed")
        seen = []
        while True:
            try:
                line = lines.get(timeout=30)
            except queue.Empty:
                self.fail("no refusal line within 30 s; stderr so far: %s" % seen)
            self.assertIsNotNone(line, "stderr ended without a refusal line: %s" % seen)
            seen.append(line)
            if refusals.REFUSED_MSG in line:
                break
        self.assertTrue(line.startswith("[WARN] " + refusals.REFUSED_MSG + ": SSL_ERROR_SSL: "), line)
        self.assertFalse([x for x in seen if "Handshake failed" in x], seen)
        self.assertEqual(ex.invoke("echo", {"text": "still"}), [("data", {"echo": "still", "version": "1.0.0"})])


class ProtocolTest(unittest.TestCase):
    def start(self, versions):
        ex = _Example(versions)
        self.addCleanup(ex.close)
        return ex

    def test_protocol_3(self):
        ex = self.start("2,3")
        self.assertEqual(ex.handshake[:3] + ex.handshake[4:5], ["1", "3", "unix", "grpc"])
        # The 6th field: the plugin's certificate, DER, base64 without
        # padding (go-plugin's RawStdEncoding), for "localhost".
        self.assertEqual(len(ex.handshake), 6)
        self.assertNotIn("=", ex.handshake[5])
        cert = mtls.x509.load_der_x509_certificate(ex.cert_der)
        self.assertEqual(cert.extensions.get_extension_for_class(mtls.x509.SubjectAlternativeName).value
                         .get_values_for_type(mtls.x509.DNSName), ["localhost"])
        self.assertEqual(ex.invoke("picture", {"caption": "a dot"}), [("mcp_result", {"content": BLOCKS})])
        # With a progress token: each step's log message and progress (the
        # caller's token), in order, then the result.
        self.assertEqual(ex.invoke("steps", {"n": 2}, meta={"progressToken": "p1"}), [
            ("notifications/message", {"level": "info", "logger": "steps", "data": "step 1 of 2"}),
            ("notifications/progress", {"progressToken": "p1", "progress": 1, "total": 2, "message": "step 1 of 2"}),
            ("notifications/message", {"level": "info", "logger": "steps", "data": "step 2 of 2"}),
            ("notifications/progress", {"progressToken": "p1", "progress": 2, "total": 2, "message": "step 2 of 2"}),
            ("data", {"steps": 2, "reported": 2}),
        ])
        # Without one: log messages only.
        self.assertEqual(ex.invoke("steps", {"n": 1}), [
            ("notifications/message", {"level": "info", "logger": "steps", "data": "step 1 of 1"}),
            ("data", {"steps": 1, "reported": 0}),
        ])
        # No MCP catalog.
        for rpc, req in ((ex.tool.Catalog, tool_pb2.CatalogRequest()), (ex.tool.Request, tool_pb2.MCPRequest(method="prompts/get"))):
            with self.assertRaises(grpc.RpcError) as cm:
                rpc(req, timeout=10)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        # Plain results, errors and streams as under protocol 2.
        self.assertEqual(ex.invoke("echo", {"text": "hé"}), [("data", {"echo": "hé", "version": "1.0.0"})])
        self.assertEqual(ex.invoke("fail", {"message": "kaputt"}), [("error", (500, "kaputt"))])
        self.assertEqual(ex.invoke("ticks", {"n": 3}, stream=True), [("data", {"i": 1}), ("data", {"i": 2}), ("data", {"i": 3})])

    def test_protocol_3_request_and_reply(self):
        ex = self.start("2,3")
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}}

        def accept(m):
            return tool_pb2.Reply(id=m.id, result=json.dumps({"action": "accept", "content": {"answer": "yes"}}).encode())
        self.assertEqual(ex.converse("sure?", accept), [
            ("elicitation/create", 1, {"message": "sure?", "requestedSchema": schema}),
            ("data", {"action": "accept", "answer": "yes"}),
        ])

        # The client's (or the host's) JSON-RPC error reaches the function.
        def refuse(m):
            return tool_pb2.Reply(id=m.id, error=tool_pb2.RPCError(code=-32601, message="no client can answer", data=b'{"why":"test"}'))
        self.assertEqual(ex.converse("q", refuse)[1:],
                         [("error", (500, "elicitation/create: no client can answer (JSON-RPC error -32601)"))])

        # Cancel while the function waits for the answer: the request fails
        # and the call ends.
        got = ex.converse("q", lambda m: None)
        self.assertLessEqual(len(got), 2, got)
        self.assertEqual(ex.invoke("echo", {"text": "still"}), [("data", {"echo": "still", "version": "1.0.0"})])

    def test_protocol_2(self):
        # A host that offers only 2: the projection, no messages.
        ex = self.start("2")
        self.assertEqual(ex.handshake[1], "2")
        self.assertEqual(ex.invoke("picture", {"caption": "a dot"}), [("data", {"content": BLOCKS, "text": "a dot"})])
        self.assertEqual(ex.invoke("steps", {"n": 2}, meta={"progressToken": 1}), [("data", {"steps": 2, "reported": 0})])
        self.assertEqual(ex.invoke("echo", {"text": "x"}), [("data", {"echo": "x", "version": "1.0.0"})])
        self.assertEqual(ex.invoke("confirm", {"question": "q"}), [("error", (
            500, "elicitation/create: no caller can answer this request: the host speaks plugin protocol 2 (JSON-RPC error -32601)"))])


if __name__ == "__main__":
    unittest.main()
