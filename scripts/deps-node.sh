#!/usr/bin/env bash
# Makes the Node plugin SDK usable by plugins (plugins/opentool-plugin-nodeecho
# runs `#!/usr/bin/env node` and requires ../pluginsdk/node beside itself):
#   1. installs the SDK's packages (@grpc/grpc-js, @grpc/proto-loader, pinned
#      by pluginsdk/node/package-lock.json) into pluginsdk/node/node_modules
#      with `npm ci --ignore-scripts` when they are missing or the lock file
#      changed (a sha256 stamp in node_modules says which lock installed them);
#   2. checks that node loads the SDK from pluginsdk/node. Nothing is
#      written outside the checkout: the example plugin requires the SDK
#      beside its own file in the plugins folder (OPENTOOL_PLUGIN_FILE).
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no node, node older than 18, npm cannot reach the registry): the
# Node plugin then fails to start with a message naming this script, and its
# tests skip.
set -uo pipefail
cd "$(dirname "$0")/.."
NODE="${NODE:-$(command -v node || true)}"
sdk="$(pwd)/pluginsdk/node"

if [ -z "$NODE" ] || [ ! -x "$NODE" ]; then
	echo "deps-node: SKIP: node not found on PATH (the Node plugin SDK needs Node.js >= 18 and npm)"
	exit 0
fi
major="$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 18 ]; then
	echo "deps-node: SKIP: $NODE is version $("$NODE" --version 2>/dev/null); the Node plugin SDK needs >= 18"
	exit 0
fi
did=()

lock="$(sha256sum "$sdk/package-lock.json" | cut -d' ' -f1)"
stamp="$sdk/node_modules/.opentool-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps-node: SKIP: npm not found (needed once to install @grpc/grpc-js into $sdk/node_modules)"
		exit 0
	fi
	if ! out="$(cd "$sdk" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1)"; then
		echo "deps-node: SKIP: npm ci in $sdk failed (registry unreachable?): $(printf '%s' "$out" | tail -1)"
		exit 0
	fi
	printf '%s\n' "$lock" >"$stamp"
	did+=("npm ci: $(cd "$sdk" && "$NODE" -p 'require("@grpc/grpc-js/package.json").version' 2>/dev/null | sed 's/^/@grpc\/grpc-js /')")
fi

# Nothing is written outside the checkout: the example plugin requires the
# SDK beside its own file (OPENTOOL_PLUGIN_FILE). A global link an earlier
# version of this script made for this checkout is removed.
for d in "$("$NODE" -p 'require("module").globalPaths.at(-1)' 2>/dev/null)" "$HOME/.node_modules"; do
	if [ -n "$d" ] && [ "$(readlink "$d/opentool-plugin" 2>/dev/null)" = "$sdk" ]; then
		rm -f "$d/opentool-plugin" && did+=("removed the old link $d/opentool-plugin")
	fi
done
if ! out="$(cd / && "$NODE" -e 'require(process.argv[1]); console.log("ok")' "$sdk" 2>&1)"; then
	echo "deps-node: SKIP: $NODE cannot load the SDK: $(printf '%s' "$out" | grep -m1 -i error)"
	exit 0
fi
if [ ${#did[@]} -eq 0 ]; then
	echo "deps-node: ok, node $("$NODE" --version) loads the SDK from $sdk (nothing to do)"
else
	(IFS=';'; echo "deps-node: $(printf '%s; ' "${did[@]}")node $("$NODE" --version) loads the SDK from $sdk")
fi
