// A desktop-style MCP client: the TypeScript SDK's Client over
// StdioClientTransport, as a desktop app starts a server from its config.
// Run by e2e/desktopclients_e2e_test.go:
//
//   node client.mjs '{"command": "...", "args": [...], "steps": [...]}'
//
// It starts command with args (the SDK's default environment, as a desktop
// client gives it), initializes, then runs each step once, in order:
//   "tools"      tools/list      → {"step": "tools", "names": [...]}
//   "resources"  resources/list  → {"step": "resources", "names": [uri...]}
//   "prompts"    prompts/list    → {"step": "prompts", "names": [...]}
//   {"call": NAME, "arguments": {...}}
//                tools/call      → {"step": "call", "name": NAME, "result": CallToolResult}
// A step that fails gives {"step": ..., "error": message} and the next
// steps still run. Each step has "ms", the milliseconds since the server
// was started. It prints {"steps": [...]} as one JSON line on stdout; the
// server's stderr is passed through to this program's stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const spec = JSON.parse(process.argv[2]);
const began = Date.now();
const client = new Client({ name: "desktop-client", version: "1.0.0" });
const transport = new StdioClientTransport({ command: spec.command, args: spec.args, stderr: "inherit" });
await client.connect(transport);

const out = [];
for (const step of spec.steps) {
  const name = typeof step === "string" ? step : "call";
  const rec = { step: name };
  try {
    if (step === "tools") {
      rec.names = (await client.listTools()).tools.map((t) => t.name);
    } else if (step === "resources") {
      rec.names = (await client.listResources()).resources.map((r) => r.uri);
    } else if (step === "prompts") {
      rec.names = (await client.listPrompts()).prompts.map((p) => p.name);
    } else if (step.call) {
      rec.name = step.call;
      rec.result = await client.callTool({ name: step.call, arguments: step.arguments ?? {} });
    } else {
      throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
  } catch (e) {
    rec.error = String(e?.message ?? e);
  }
  rec.ms = Date.now() - began;
  out.push(rec);
}
console.log(JSON.stringify({ steps: out }));
await client.close();
