// A client of MCP 2025-11-25's core tasks, with the TypeScript SDK
// (client.experimental.tasks), for e2e/coretasks_e2e_test.go.
//
//   node coretasks-client.mjs SDK_DIR URL KEY TOOL ARGS_JSON
//
// SDK_DIR is the @modelcontextprotocol/sdk package folder, URL the host's
// /mcp, KEY its API key. It connects (initialize, 2025-11-25), calls TOOL
// with ARGS_JSON through callToolStream asking for a task
// (options.task), lists the tasks, and prints one JSON line:
// {"protocolVersion", "tasksCapability", "messages": [{type, status,
// taskId}...], "result", "listed": [taskId...]}. Any failure exits 1
// with the error on stderr.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, url, key, tool, argsJSON] = process.argv.slice(2);
const esm = (p) => import(pathToFileURL(join(sdkDir, "dist", "esm", p)).href);
const { Client } = await esm("client/index.js");
const { StreamableHTTPClientTransport } = await esm("client/streamableHttp.js");

const client = new Client({ name: "coretasks-e2e", version: "1.0.0" }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);

const out = {
  protocolVersion: transport.protocolVersion ?? null,
  tasksCapability: client.getServerCapabilities()?.tasks ?? null,
  messages: [],
  result: null,
  listed: [],
};
const stream = client.experimental.tasks.callToolStream(
  { name: tool, arguments: JSON.parse(argsJSON) },
  undefined,
  { task: { ttl: 60000 } },
);
for await (const m of stream) {
  switch (m.type) {
    case "taskCreated":
    case "taskStatus":
      out.messages.push({ type: m.type, status: m.task.status, taskId: m.task.taskId });
      break;
    case "result":
      out.messages.push({ type: m.type });
      out.result = m.result;
      break;
    case "error":
      console.error("callToolStream error:", m.error);
      process.exit(1);
  }
}
const listed = await client.experimental.tasks.listTasks();
out.listed = listed.tasks.map((t) => t.taskId);
console.log(JSON.stringify(out));
await client.close();
