'use strict';
// opentool-plugin: write opentool-host plugins in JavaScript.
// See README.md and docs/plugin-protocol.md in the opentool-host repository.
const { Toolkit, ToolError, RPCError, Context } = require('./lib/toolkit');
const { Result, text, image, audio, resourceLink, embeddedResource } = require('./lib/content');
const { serve, log, PROTOCOL_VERSION, PROTOCOL_VERSIONS } = require('./lib/server');

module.exports = {
  Toolkit, ToolError, RPCError, Context, serve, log, PROTOCOL_VERSION, PROTOCOL_VERSIONS,
  Result, text, image, audio, resourceLink, embeddedResource,
};
