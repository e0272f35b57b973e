#!/usr/bin/env bash
# Makes the Python plugin SDK usable by Debian's /usr/bin/python3 (the
# interpreter plugins/opentool-plugin-pyecho names in its shebang):
#   1. installs python3-grpcio (and with it python3-protobuf) and
#      python3-cryptography (the SDK authenticates the host with mTLS) with
#      apt-get when /usr/bin/python3 cannot import grpc or cryptography and
#      this runs as root;
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
	echo "deps-python: SKIP: $PY not found (the Python plugin SDK needs Debian's python3, python3-grpcio and python3-cryptography)"
	exit 0
fi
did=()
# need MODULE PACKAGE: apt-get installs PACKAGE when $PY cannot import
# MODULE; returns 1 (having said SKIP) when it cannot.
need() {
	if "$PY" -c "import $1" >/dev/null 2>&1; then
		return 0
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "deps-python: SKIP: $PY cannot import $1 and this is not root (apt-get install $2)"
		return 1
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "deps-python: SKIP: $PY cannot import $1 and there is no apt-get (install $1 for $PY)"
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq "$2" >/dev/null 2>&1; then
		apt-get update -qq >/dev/null 2>&1
		if ! apt-get install -y -qq "$2" >/dev/null 2>&1; then
			echo "deps-python: SKIP: apt-get install $2 failed (no network or no such package)"
			return 1
		fi
	fi
	did+=("installed $2 $("$PY" -c "import $1; print($1.__version__)" 2>/dev/null)")
}
need grpc python3-grpcio || exit 0
need cryptography python3-cryptography || exit 0

# Nothing is written outside the checkout: the example plugin finds the SDK
# beside its own file (OPENTOOL_PLUGIN_FILE). A .pth file an earlier version
# of this script wrote for this checkout is removed.
site="$("$PY" -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)"
if [ -n "$site" ] && [ "$(cat "$site/opentool_plugin.pth" 2>/dev/null)" = "$sdk" ]; then
	rm -f "$site/opentool_plugin.pth" && did+=("removed the old $site/opentool_plugin.pth")
fi
if ! out="$(cd / && PYTHONPATH="$sdk" "$PY" -c 'import opentool_plugin, opentool_plugin.mtls; print(opentool_plugin.__file__)' 2>&1)"; then
	echo "deps-python: SKIP: $PY cannot import the SDK: $(printf '%s' "$out" | tail -1)"
	exit 0
fi
if [ ${#did[@]} -eq 0 ]; then
	echo "deps-python: ok, $PY imports grpc, cryptography and opentool_plugin from $sdk (nothing to do)"
else
	(IFS=';'; echo "deps-python: $(printf '%s; ' "${did[@]}")$PY imports opentool_plugin")
fi
