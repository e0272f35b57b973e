#!/usr/bin/env bash
# Makes the status page's browser test runnable
# (cmd/opentool-host/statuspage_e2e_test.go runs webtest/statuspage.test.js):
#   1. Debian's chromium at /usr/bin/chromium (or $CHROMIUM), installed with
#      apt-get when missing and running as root;
#   2. playwright-core, pinned by webtest/package-lock.json, installed into
#      webtest/node_modules (git-ignored) with `npm ci --ignore-scripts` when
#      missing or when the lock file changed (a sha256 stamp in node_modules
#      says which lock installed it). playwright-core downloads no browser:
#      the test drives the Debian one.
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no root for apt, apt or npm failing, no node >= 20): the browser
# test then skips, naming this script.
set -uo pipefail
cd "$(dirname "$0")/.."
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
NODE="${NODE:-$(command -v node || true)}"
web="$(pwd)/webtest"
did=()

if [ ! -x "$CHROMIUM" ]; then
	if [ "$CHROMIUM" != /usr/bin/chromium ]; then
		echo "deps-browser: SKIP: CHROMIUM=$CHROMIUM is not an executable"
		exit 0
	fi
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "deps-browser: SKIP: /usr/bin/chromium missing and cannot apt-get install chromium (needs root and apt-get)"
		exit 0
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! out="$(apt-get install -y -q --no-install-recommends chromium 2>&1)"; then
		# The package lists may be missing or stale on a new machine.
		if ! out="$(apt-get update -q 2>&1 && apt-get install -y -q --no-install-recommends chromium 2>&1)"; then
			echo "deps-browser: SKIP: apt-get install chromium failed: $(printf '%s' "$out" | grep -m1 -E '^E:' || printf '%s' "$out" | tail -1)"
			exit 0
		fi
	fi
	if [ ! -x "$CHROMIUM" ]; then
		echo "deps-browser: SKIP: apt-get installed chromium but $CHROMIUM is missing"
		exit 0
	fi
	did+=("apt-get installed chromium")
fi

if [ -z "$NODE" ] || [ ! -x "$NODE" ]; then
	echo "deps-browser: SKIP: node not found on PATH (the browser test needs Node.js >= 20 and npm)"
	exit 0
fi
major="$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 20 ]; then
	echo "deps-browser: SKIP: $NODE is version $("$NODE" --version 2>/dev/null); playwright-core needs >= 20"
	exit 0
fi

lock="$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)"
stamp="$web/node_modules/.opentool-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps-browser: SKIP: npm not found (needed once to install playwright-core into $web/node_modules)"
		exit 0
	fi
	if ! out="$(cd "$web" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1)"; then
		echo "deps-browser: SKIP: npm ci in $web failed (registry unreachable?): $(printf '%s' "$out" | tail -1)"
		exit 0
	fi
	printf '%s\n' "$lock" >"$stamp"
	did+=("npm ci: playwright-core $(cd "$web" && "$NODE" -p 'require("playwright-core/package.json").version' 2>/dev/null)")
fi

if ! out="$(cd "$web" && "$NODE" -e 'require("playwright-core")' 2>&1)"; then
	echo "deps-browser: SKIP: $NODE cannot load playwright-core from $web: $(printf '%s' "$out" | grep -m1 -i error)"
	exit 0
fi
version="$("$CHROMIUM" --version 2>/dev/null | head -1)"
if [ ${#did[@]} -eq 0 ]; then
	echo "deps-browser: ok, ${version:-$CHROMIUM} and playwright-core in $web (nothing to do)"
else
	(IFS=';'; echo "deps-browser: $(printf '%s; ' "${did[@]}")${version:-$CHROMIUM}, playwright-core in $web")
fi
