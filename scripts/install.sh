#!/usr/bin/env bash
# make install: puts opentool-host and the plugin SDKs under PREFIX (the
# first argument; make's PREFIX, default ~/.local), so that a plugins folder
# anywhere can hold Python and Node plugins, not only this checkout's:
#   PREFIX/bin/opentool-host                  bin/opentool-host (make host)
#   PREFIX/bin/opentool-host-keeper           its small keeper program, beside it
#   PREFIX/bin/opentool-host-coderunner       its code runner (--code-mode), beside it
#   PREFIX/lib/python3.X/site-packages/       the Python SDK (pluginsdk/python):
#                                             pip install --user with
#                                             PYTHONUSERBASE=PREFIX, which is
#                                             /usr/bin/python3's user site when
#                                             PREFIX is ~/.local
#   PREFIX/lib/node_modules/opentool-plugin/  the Node SDK (pluginsdk/node):
#                                             npm pack with its dependencies
#                                             bundled (deps-node installed them),
#                                             then npm install -g --prefix PREFIX
# Nothing is fetched: pip gets --no-index and --no-deps (grpcio and
# cryptography are Debian's, make deps-python), npm --offline. An SDK whose
# interpreter or installer is missing is skipped, saying why (SKIP), as
# make deps-python and deps-node do. Prints one line per part, then how
# plugins find the SDKs when PREFIX is not ~/.local.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:?usage: scripts/install.sh PREFIX}"
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
PY="${PYTHON:-/usr/bin/python3}"

for b in opentool-host opentool-host-keeper opentool-host-coderunner; do
	if [ ! -x "bin/$b" ]; then
		echo "install: bin/$b is not built: run make install (it builds it), not this script alone" >&2
		exit 1
	fi
done
install -D -m 755 bin/opentool-host-keeper "$prefix/bin/opentool-host-keeper"
install -D -m 755 bin/opentool-host-coderunner "$prefix/bin/opentool-host-coderunner"
install -D -m 755 bin/opentool-host "$prefix/bin/opentool-host"
echo "install: $prefix/bin/opentool-host (and its keeper, opentool-host-keeper, and code runner, opentool-host-coderunner)"

# work is a scratch folder, removed at exit: pip builds in a copy of the
# SDK (it would leave build/ and *.egg-info in the checkout), npm packs there.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

install_python() {
	if [ ! -x "$PY" ]; then
		echo "install: SKIP the Python SDK: $PY not found"
		return
	fi
	if ! "$PY" -m pip --version >/dev/null 2>&1; then
		echo "install: SKIP the Python SDK: $PY has no pip (apt-get install python3-pip)"
		return
	fi
	cp -r pluginsdk/python "$work/python"
	rm -rf "$work/python/tests"
	local out
	# --break-system-packages: Debian's pip refuses --user installs
	# (PEP 668) unless told; this package has no dependency pip would
	# install, so nothing of the system's is touched.
	if ! out="$(cd "$work/python" && PYTHONUSERBASE="$prefix" PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install \
		--user --no-deps --no-build-isolation --no-index --force-reinstall --break-system-packages --quiet . 2>&1)"; then
		echo "install: the Python SDK: pip install failed: $(printf '%s' "$out" | grep -v '^WARNING' | tail -1)" >&2
		exit 1
	fi
	echo "install: the Python SDK into $(PYTHONUSERBASE="$prefix" "$PY" -c 'import site; print(site.getusersitepackages())')"
}

install_node() {
	if ! command -v npm >/dev/null 2>&1; then
		echo "install: SKIP the Node SDK: npm not found"
		return
	fi
	if [ ! -d pluginsdk/node/node_modules/@grpc/grpc-js ]; then
		echo "install: SKIP the Node SDK: pluginsdk/node/node_modules has no @grpc/grpc-js (make deps-node said why)"
		return
	fi
	local out
	if ! out="$(cd pluginsdk/node && npm pack --pack-destination "$work" --silent 2>&1)" ||
		! out="$(npm install -g --offline --prefix "$prefix" --no-audit --no-fund --loglevel=error "$work"/opentool-plugin-*.tgz 2>&1)"; then
		echo "install: the Node SDK: npm failed: $(printf '%s' "$out" | tail -1)" >&2
		exit 1
	fi
	echo "install: the Node SDK into $prefix/lib/node_modules/opentool-plugin"
}

install_python
install_node

if [ "$prefix" != "$HOME/.local" ]; then
	echo "install: plugins find these SDKs when the host passes them two variables:"
	echo "  export PYTHONUSERBASE=$prefix NODE_PATH=$prefix/lib/node_modules"
	echo "  opentool-host run --plugin-env PYTHONUSERBASE --plugin-env NODE_PATH ..."
fi
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*) echo "install: $prefix/bin is not on PATH: add it (export PATH=\"$prefix/bin:\$PATH\")" ;;
esac
