"""The error a function raises to answer its caller with a code.

Its own module so that toolkit and content both import it, neither the
other.
"""

__all__ = ["ToolError"]


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
