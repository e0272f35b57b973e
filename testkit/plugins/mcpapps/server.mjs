// An MCP Apps server over stdio, for the host's tests: the example
// server of @modelcontextprotocol/ext-apps, basic-server-vanillajs (npm
// @modelcontextprotocol/server-basic-vanillajs, its createServer: the
// tool get-time with _meta.ui.resourceUri, registered with
// registerAppTool, and its view ui://get-time/mcp-app.html, with
// registerAppResource), whose UI tool is listed only to clients that
// declare the MCP Apps extension, as ext-apps documents ("Servers check
// host capabilities before registering UI-enabled tools"): once the
// client is initialized, getUiCapability of its capabilities, and the
// tool enabled when its mimeTypes include RESOURCE_MIME_TYPE. It also
// serves get-time-text to every client, a text-only fallback, and
// format-time, whose description and input schema differ by client: its
// format is "iso" for a UI-capable client, "iso" or "unix" for any other,
// and its description says which (registered once the client is
// initialized, as the UI tool is enabled).
//
// Its packages are the conformance suite's npm dependencies (conformance/
// package.json, pinned by package-lock.json): the test runs a copy of
// this file from a folder whose node_modules is conformance/node_modules.
import { createServer } from "@modelcontextprotocol/server-basic-vanillajs";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { getUiCapability, RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps/server";
import { z } from "zod";

const server = createServer();
const ui = server._registeredTools["get-time"];
ui.disable();
server.registerTool("get-time-text", { description: "Returns the current server time as text." }, async () => ({
  content: [{ type: "text", text: new Date().toISOString() }],
}));
server.server.oninitialized = () => {
  const cap = getUiCapability(server.server.getClientCapabilities());
  const isUI = cap?.mimeTypes?.includes(RESOURCE_MIME_TYPE);
  if (isUI) {
    ui.enable();
  }
  const formats = isUI ? ["iso"] : ["iso", "unix"];
  server.registerTool("format-time", {
    description: `Returns the current server time in a format: ${formats.join(" or ")}.`,
    inputSchema: z.object({ format: z.enum(formats) }),
  }, async ({ format }) => ({
    content: [{ type: "text", text: format === "unix" ? String(Math.floor(Date.now() / 1000)) : new Date().toISOString() }],
  }));
};
await server.connect(new StdioServerTransport());
