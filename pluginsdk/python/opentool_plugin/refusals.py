"""Logs the connections the plugin refused in the TLS handshake.

grpcio gives Python no hook for a failed handshake: gRPC's core (C, linked
into grpcio) writes one line to file descriptor 2 for each, "E... Handshake
failed with fatal error SSL_ERROR_SSL: ...". watch() puts a pipe in front of
descriptor 2 and a thread that turns each such line into the line the Go and
Node SDKs log for a refused connection ("[WARN] refused a connection that did
not authenticate as the host: REASON", at most one a second, the next saying
how many were left out), and passes every other line through unchanged.
Python's own sys.stderr (the SDK's log lines, tracebacks) and stdout after
the handshake write to the real stderr directly, not through the pipe.
"""

import os
import sys
import threading
import time

__all__ = ["REFUSED_MSG", "LOG_INTERVAL", "Filter", "watch"]

# The line's text, as the Go SDK's RefusedConnMsg and the Node SDK's.
REFUSED_MSG = "refused a connection that did not authenticate as the host"
# At most one refusal line per this (seconds), as the Node SDK: a neighbour
# knocking in a loop must not flood the host's log.
LOG_INTERVAL = 1.0
# What gRPC's core writes for a connection whose TLS handshake failed.
_HANDSHAKE_FAILED = b"Handshake failed with fatal error "
# The longest line read at once; a longer one passes through in pieces.
_MAX_LINE = 64 << 10


class Filter:
    """Rewrites gRPC core's lines of descriptor 2 (bytes, each ending in
    a newline unless cut at _MAX_LINE): line() returns the bytes to write
    in its place, b"" for a refusal within interval of the last one logged.
    clock is a monotonic clock in seconds."""

    def __init__(self, clock=time.monotonic, interval=LOG_INTERVAL):
        self._clock = clock
        self._interval = interval
        self._last = None
        self._skipped = 0

    def line(self, raw):
        _, found, why = raw.partition(_HANDSHAKE_FAILED)
        if not found:
            return raw
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            self._skipped += 1
            return b""
        self._last = now
        more = " (and %d more since the last such line)" % self._skipped if self._skipped else ""
        self._skipped = 0
        reason = why.decode("utf-8", "backslashreplace").strip().rstrip(".")
        return ("[WARN] %s: %s%s\n" % (REFUSED_MSG, reason, more)).encode()


def _pump(src, dst, f):
    """Copies src's lines to descriptor dst through f until src ends."""
    with os.fdopen(src, "rb", buffering=0) as r:
        pending = b""
        while True:
            chunk = r.read(_MAX_LINE)
            if not chunk:
                break
            pending += chunk
            while True:
                nl = pending.find(b"\n", 0, _MAX_LINE)
                if nl >= 0:
                    end = nl + 1
                elif len(pending) >= _MAX_LINE:
                    end = _MAX_LINE
                else:
                    break
                line, pending = pending[:end], pending[end:]
                _write(dst, f.line(line))
        if pending:
            _write(dst, f.line(pending))


def _write(fd, data):
    """Writes all of data to fd, dropping it when fd is gone (the host
    closed the plugin's stderr)."""
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def watch(f=None):
    """Puts a pipe in front of file descriptor 2 whose lines a daemon
    thread writes to the real stderr through f (a Filter; None: a new
    one), and points sys.stderr at the real stderr. Returns the real
    stderr's descriptor. Processes started later inherit the pipe as
    their stderr: their lines reach the host through the thread while
    the plugin runs."""
    real = os.dup(2)
    r, w = os.pipe()
    os.dup2(w, 2)
    os.close(w)
    sys.stderr = os.fdopen(real, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    threading.Thread(target=_pump, args=(r, real, f or Filter()), name="opentool-stderr", daemon=True).start()
    return real
