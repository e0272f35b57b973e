'use strict';
// opentool-plugin: write opentool-host plugins in JavaScript.
// See README.md and docs/plugin-protocol.md in the opentool-host repository.
const { Toolkit, ToolError, Context } = require('./lib/toolkit');
const { serve, log, PROTOCOL_VERSION } = require('./lib/server');

module.exports = { Toolkit, ToolError, Context, serve, log, PROTOCOL_VERSION };
