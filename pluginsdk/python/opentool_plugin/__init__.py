"""opentool_plugin: write opentool-host plugins in Python.

    from opentool_plugin import Toolkit, ToolError, serve

    tk = Toolkit(title="pyecho", version="1.0.0")

    @tk.function(description="Echo text back.",
                 parameters={"text": {"type": "string", "description": "Text.", "required": True}},
                 returns={"type": "object", "properties": {"echo": {"type": "string"}}})
    def echo(ctx, text):
        return {"echo": text}

    serve(tk)

Depends on grpcio (and the protobuf runtime it brings) only. See README.md.
"""

from .toolkit import Context, Function, Toolkit, ToolError
from .server import serve

__all__ = ["Toolkit", "ToolError", "Context", "Function", "serve"]
__version__ = "0.1.0"
