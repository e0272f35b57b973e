#!/usr/bin/env bash
# Regenerates the Python SDK's gRPC stubs (pluginsdk/python/opentool_plugin/pb)
# from internal/wire/toolpb/tool.proto, pluginsdk/python/proto/health.proto and
# go-plugin's grpc_controller.proto and grpc_stdio.proto (the version go.mod
# requires, from the Go module cache).
#
# Needs protoc and grpc_python_plugin of the same gRPC release as the runtime
# (Debian bookworm: protobuf-compiler 3.21 and protobuf-compiler-grpc 1.51,
# matching python3-protobuf 3.21/4.21 and python3-grpcio 1.51); installs them
# with apt-get when missing and run as root. The generated code imports its
# siblings package-relative ("from . import tool_pb2").
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v grpc_python_plugin >/dev/null 2>&1 || need+=(protobuf-compiler-grpc)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	else
		echo "genproto-python: missing ${need[*]} (Debian packages); install them or run as root" >&2
		exit 1
	fi
fi

gp="$(go list -m -f '{{.Dir}}' github.com/hashicorp/go-plugin 2>/dev/null || true)"
if [ -z "$gp" ] || [ ! -d "$gp" ]; then
	go mod download github.com/hashicorp/go-plugin
	gp="$(go list -m -f '{{.Dir}}' github.com/hashicorp/go-plugin)"
fi

out=pluginsdk/python/opentool_plugin/pb
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp internal/wire/toolpb/tool.proto pluginsdk/python/proto/health.proto \
	"$gp/internal/plugin/grpc_controller.proto" "$gp/internal/plugin/grpc_stdio.proto" "$tmp/"

protoc -I "$tmp" -I /usr/include \
	--python_out="$tmp" \
	--grpc_out="$tmp" --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
	"$tmp"/tool.proto "$tmp"/health.proto "$tmp"/grpc_controller.proto "$tmp"/grpc_stdio.proto

mkdir -p "$out"
for f in "$tmp"/*_pb2.py "$tmp"/*_pb2_grpc.py; do
	# "import tool_pb2 as tool__pb2" -> "from . import tool_pb2 as tool__pb2"
	sed -E 's/^import ([A-Za-z0-9_]+_pb2) as /from . import \1 as /' "$f" >"$out/$(basename "$f")"
done
[ -f "$out/__init__.py" ] || echo '"""Generated gRPC stubs (scripts/genproto-python.sh); do not edit."""' >"$out/__init__.py"
echo "genproto-python: $out regenerated ($(protoc --version), grpc_python_plugin $(dpkg-query -W -f='${Version}' protobuf-compiler-grpc 2>/dev/null || echo '?'))"
