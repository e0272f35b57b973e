"""MCP tool results: content blocks, structuredContent and isError.

A unary function may return a Result instead of a dict. MCP clients of the
host (/mcp, `opentool-host mcp`) receive it as it is, an MCP
CallToolResult (MCP 2025-11-25 "Tools", Tool Result); every other caller
(/opentool/call, Open Tool Calling) gets its projection, the one the host
documents (docs/writing-plugins.md) and Result.project() computes:

    structured_content, a dict      the result: that dict
    structured_content, other       {"result": VALUE}
    no structured_content           {"content": [BLOCKS], "text": TEXT}
    is_error=True                   tool error 500 with TEXT

TEXT is the text blocks' text joined by "\\n".

    from opentool_plugin import Result, text, image

    @tk.function(description="Draw a chart.")
    def chart(ctx, title: str):
        return Result([text(title), image(png_bytes, "image/png")])
"""

import base64
import binascii
import json

from .errors import ToolError

__all__ = ["Result", "text", "image", "audio", "resource_link", "embedded_resource", "LOG_LEVELS"]

# MCP's log levels (RFC 5424 severities), lowest first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# The text of an isError result without text blocks, as the host says it.
_NO_ERROR_TEXT = "the MCP tool reported an error without text"


def _block(kind, fields, annotations, meta):
    b = {"type": kind}
    b.update((k, v) for k, v in fields if v is not None)
    if annotations is not None:
        if not isinstance(annotations, dict):
            raise TypeError("annotations must be a dict (audience, priority, lastModified), got %r" % type(annotations).__name__)
        b["annotations"] = dict(annotations)
    if meta is not None:
        if not isinstance(meta, dict):
            raise TypeError("_meta must be a dict, got %r" % type(meta).__name__)
        b["_meta"] = dict(meta)
    return b


def _base64(data, what):
    """data as standard base64 text: bytes-like values are encoded; a str
    is taken as base64 already and checked. Raises TypeError or
    ValueError."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(data)).decode("ascii")
    if isinstance(data, str):
        try:
            base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise ValueError("%s: a str must be standard base64 (give bytes to have the SDK encode them)" % what) from None
        return data
    raise TypeError("%s: data must be bytes (or base64 text), got %s" % (what, type(data).__name__))


def text(text, annotations=None, meta=None):
    """A text content block: {"type": "text", "text": TEXT}."""
    if not isinstance(text, str):
        raise TypeError("text: want a str, got %s" % type(text).__name__)
    return _block("text", [("text", text)], annotations, meta)


def image(data, mime_type, annotations=None, meta=None):
    """An image content block: {"type": "image", "data": BASE64,
    "mimeType": MIME}. data is the image's bytes (the SDK encodes them) or
    base64 text."""
    if not isinstance(mime_type, str) or not mime_type:
        raise ValueError("image: mime_type must be a MIME type such as image/png")
    return _block("image", [("data", _base64(data, "image")), ("mimeType", mime_type)], annotations, meta)


def audio(data, mime_type, annotations=None, meta=None):
    """An audio content block: {"type": "audio", "data": BASE64,
    "mimeType": MIME}; data as for image."""
    if not isinstance(mime_type, str) or not mime_type:
        raise ValueError("audio: mime_type must be a MIME type such as audio/wav")
    return _block("audio", [("data", _base64(data, "audio")), ("mimeType", mime_type)], annotations, meta)


def resource_link(uri, name, title=None, description=None, mime_type=None, size=None, annotations=None, meta=None):
    """A resource link content block: {"type": "resource_link", "uri",
    "name", ...}, a resource the client may read (or not)."""
    if not isinstance(uri, str) or not uri or not isinstance(name, str) or not name:
        raise ValueError("resource_link: uri and name must be non-empty strs")
    return _block("resource_link", [("uri", uri), ("name", name), ("title", title), ("description", description),
                                    ("mimeType", mime_type), ("size", size)], annotations, meta)


def embedded_resource(uri, text=None, blob=None, mime_type=None, annotations=None, meta=None):
    """An embedded resource content block: {"type": "resource", "resource":
    {"uri", "mimeType", "text" | "blob"}}: exactly one of text (a str) and
    blob (bytes, or base64 text)."""
    if not isinstance(uri, str) or not uri:
        raise ValueError("embedded_resource: uri must be a non-empty str")
    if (text is None) == (blob is None):
        raise ValueError("embedded_resource: give exactly one of text and blob")
    res = {"uri": uri}
    if mime_type is not None:
        res["mimeType"] = mime_type
    if text is not None:
        if not isinstance(text, str):
            raise TypeError("embedded_resource: text must be a str")
        res["text"] = text
    else:
        res["blob"] = _base64(blob, "embedded_resource")
    return _block("resource", [("resource", res)], annotations, meta)


_BLOCK_TYPES = ("text", "image", "audio", "resource_link", "resource")


class Result:
    """A unary function's result as MCP says it.

    content: a list of content blocks (text(), image(), audio(),
    resource_link(), embedded_resource(), or dicts of that shape; a str is
    taken as a text block); structured_content: any JSON value (an object
    is what MCP's outputSchema describes); is_error: the tool failed (MCP
    clients see the result, OpenTool callers a tool error 500 with its
    text); meta: the result's _meta.
    """

    __slots__ = ("content", "structured_content", "is_error", "meta")

    def __init__(self, content=None, structured_content=None, is_error=False, meta=None):
        if content is None:
            content = []
        if isinstance(content, (str, dict)):
            content = [content]
        blocks = []
        for i, b in enumerate(content):
            if isinstance(b, str):
                b = text(b)
            if not isinstance(b, dict) or b.get("type") not in _BLOCK_TYPES:
                raise ValueError("Result: content[%d] is not a content block (a dict whose type is one of %s)"
                                 % (i, ", ".join(_BLOCK_TYPES)))
            blocks.append(b)
        if meta is not None and not isinstance(meta, dict):
            raise TypeError("Result: meta must be a dict")
        self.content = blocks
        self.structured_content = structured_content
        self.is_error = bool(is_error)
        self.meta = meta

    def to_dict(self):
        """The MCP CallToolResult, as a dict."""
        d = {"content": list(self.content)}
        if self.structured_content is not None:
            d["structuredContent"] = self.structured_content
        if self.is_error:
            d["isError"] = True
        if self.meta is not None:
            d["_meta"] = self.meta
        return d

    def text(self):
        """The text blocks' text joined by newlines ("" when there is none)."""
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    def project(self):
        """The OpenTool result object of this result (the table in the
        module's comment): a dict. Raises ToolError(500, TEXT) when
        is_error."""
        if self.is_error:
            raise ToolError(500, self.text() or _NO_ERROR_TEXT)
        sc = self.structured_content
        if sc is not None:
            return sc if isinstance(sc, dict) else {"result": sc}
        return {"content": list(self.content), "text": self.text()}

    def __repr__(self):
        return "Result(%s)" % json.dumps(self.to_dict(), ensure_ascii=False)[:200]
