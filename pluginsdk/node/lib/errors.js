'use strict';

// The error a function throws to answer its caller with a code. Its own
// module so that toolkit.js and content.js both require it, neither the
// other.

/**
 * An error with a code, sent to the caller as the function's error.
 * Codes: 400 invalid arguments, 404 unknown function, 500 tool failure, or
 * the tool's own. Any other thrown value becomes code 500 with its message.
 */
class ToolError extends Error {
  /** @param {number} code @param {string} message */
  constructor(code, message) {
    super(String(message));
    this.name = 'ToolError';
    this.code = Math.trunc(Number(code)) || 500;
  }
}

module.exports = { ToolError };
