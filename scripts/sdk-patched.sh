#!/bin/sh
# The MCP Go SDK of go.mod with the patches of patches/go-sdk applied
# (see patches/go-sdk/README.md), for builds that measure them:
#
#   bin/go-sdk-patched       the SDK's module (from the module cache) with
#                            every patches/go-sdk/*.patch applied, in order
#   bin/go.sdkpatched.mod    go.mod with a replace to it (and .sum)
#
# `make bench SDKPATCH=1` builds with -modfile=bin/go.sdkpatched.mod; so
# may any go command (GOFLAGS=-modfile=$PWD/bin/go.sdkpatched.mod). The
# default build uses the SDK as released.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
mod=github.com/modelcontextprotocol/go-sdk
ver=$(GOFLAGS= $GO list -m -f '{{.Version}}' $mod)
src=$(GOFLAGS= $GO mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "sdk-patched: $mod@$ver is not in the module cache" >&2; exit 1; }
out=$PWD/bin/go-sdk-patched
rm -rf "$out"
mkdir -p bin
cp -R "$src" "$out"
chmod -R u+w "$out"
for p in patches/go-sdk/*.patch; do
	patch -s -p1 -d "$out" < "$p"
done
cp go.mod bin/go.sdkpatched.mod
cp go.sum bin/go.sdkpatched.sum
printf '\nreplace %s => %s\n' "$mod" "$out" >> bin/go.sdkpatched.mod
echo "sdk-patched: $mod@$ver with $(ls patches/go-sdk/*.patch | wc -l) patch(es) in $out; build with -modfile=$PWD/bin/go.sdkpatched.mod"
