#!/usr/bin/env bash
# Regenerates internal/wire/toolpb from tool.proto. Installs protoc (Debian's
# protobuf-compiler) and the Go generators when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null 2>&1; then
	if command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq protobuf-compiler
	else
		echo "genproto: protoc not found; install protobuf-compiler" >&2
		exit 1
	fi
fi

GOBIN="$(go env GOPATH)/bin"
export PATH="$GOBIN:$PATH"
go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

protoc -I internal/wire/toolpb \
	--go_out=internal/wire/toolpb --go_opt=paths=source_relative \
	--go-grpc_out=internal/wire/toolpb --go-grpc_opt=paths=source_relative \
	internal/wire/toolpb/tool.proto
echo "genproto: internal/wire/toolpb regenerated"

# The other SDKs: the Node SDK loads .proto files at run time (a copy of
# each, checked by internal/wire's TestSDKProtoCopies); the Python SDK has
# generated stubs (scripts/genproto-python.sh, needs Debian's grpc plugin).
gp="$(go list -m -f '{{.Dir}}' github.com/hashicorp/go-plugin)"
install -m 644 internal/wire/toolpb/tool.proto pluginsdk/python/proto/health.proto \
	"$gp/internal/plugin/grpc_controller.proto" "$gp/internal/plugin/grpc_stdio.proto" pluginsdk/node/proto/
echo "genproto: pluginsdk/node/proto copied; run scripts/genproto-python.sh for the Python stubs"
