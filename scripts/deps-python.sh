#!/usr/bin/env bash
# Makes the Python plugin SDK usable by Debian's /usr/bin/python3 (the
# interpreter plugins/opentool-plugin-pyecho names in its shebang):
#   1. installs python3-grpcio (and with it python3-protobuf) with apt-get
#      when /usr/bin/python3 cannot import grpc and this runs as root;
#   2. checks that the interpreter imports the SDK from pluginsdk/python.
#      Nothing is written outside the checkout: the example plugin finds the
#      SDK beside its own file in the plugins folder (OPENTOOL_PLUGIN_FILE).
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no /usr/bin/python3, not root, no apt-get): the Python plugin then
# fails to start with a message naming this script, and its tests skip.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-/usr/bin/python3}"
sdk="$(pwd)/pluginsdk/python"

if [ ! -x "$PY" ]; then
	echo "deps-python: SKIP: $PY not found (the Python plugin SDK needs Debian's python3 and python3-grpcio)"
	exit 0
fi
did=()
if ! "$PY" -c 'import grpc' >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps-python: SKIP: $PY cannot import grpc and this is not root (apt-get install python3-grpcio)"
		exit 0
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "deps-python: SKIP: $PY cannot import grpc and there is no apt-get (install grpcio for $PY)"
		exit 0
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq python3-grpcio >/dev/null 2>&1; then
		apt-get update -qq >/dev/null 2>&1
		if ! apt-get install -y -qq python3-grpcio >/dev/null 2>&1; then
			echo "deps-python: SKIP: apt-get install python3-grpcio failed (no network or no such package)"
			exit 0
		fi
	fi
	did+=("installed python3-grpcio $("$PY" -c 'import grpc; print(grpc.__version__)' 2>/dev/null)")
fi

# Nothing is written outside the checkout: the example plugin finds the SDK
# beside its own file (OPENTOOL_PLUGIN_FILE). A .pth file an earlier version
# of this script wrote for this checkout is removed.
site="$("$PY" -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)"
if [ -n "$site" ] && [ "$(cat "$site/opentool_plugin.pth" 2>/dev/null)" = "$sdk" ]; then
	rm -f "$site/opentool_plugin.pth" && did+=("removed the old $site/opentool_plugin.pth")
fi
if ! out="$(cd / && PYTHONPATH="$sdk" "$PY" -c 'import opentool_plugin, grpc; print(opentool_plugin.__file__)' 2>&1)"; then
	echo "deps-python: SKIP: $PY cannot import the SDK: $(printf '%s' "$out" | tail -1)"
	exit 0
fi
if [ ${#did[@]} -eq 0 ]; then
	echo "deps-python: ok, $PY imports grpc and opentool_plugin from $sdk (nothing to do)"
else
	(IFS=';'; echo "deps-python: $(printf '%s; ' "${did[@]}")$PY imports opentool_plugin")
fi
