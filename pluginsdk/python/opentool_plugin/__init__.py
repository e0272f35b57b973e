"""opentool_plugin: write opentool-host plugins in Python.

    from opentool_plugin import Toolkit, ToolError, Result, text, image, serve

    tk = Toolkit(title="pyecho", version="1.0.0")

    @tk.function(description="Echo text back.",
                 parameters={"text": {"type": "string", "description": "Text.", "required": True}},
                 returns={"type": "object", "properties": {"echo": {"type": "string"}}})
    def echo(ctx, text):
        return {"echo": text}

    @tk.function(description="Draw a dot.")
    def dot(ctx):
        ctx.progress(1, 2, "drawing")           # an MCP caller that asked sees it
        return Result([text("a dot"), image(PNG, "image/png")])

    serve(tk)

Depends on grpcio (and the protobuf runtime it brings) and cryptography
(the host is authenticated with mTLS, mtls.py) only. See README.md.
"""

from .content import Result, audio, embedded_resource, image, resource_link, text
from .toolkit import Context, Function, RPCError, Toolkit, ToolError
from .server import serve

__all__ = ["Toolkit", "ToolError", "RPCError", "Context", "Function", "serve",
           "Result", "text", "image", "audio", "resource_link", "embedded_resource"]
__version__ = "0.3.0"
