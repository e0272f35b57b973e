#!/bin/sh
# The MCP Go SDK of go.mod with the patches of patches/go-sdk applied
# (see patches/go-sdk/README.md), for builds that measure them:
#
#   bin/go-sdk-patched       the SDK's module (from the module cache) with
#                            every patches/go-sdk/*.patch applied, in order
#   bin/go.sdkpatched.mod    go.mod with a replace to it (and .sum)
#
# Every go command of the Makefile builds with -modfile=bin/go.sdkpatched.mod
# (unless SDKPATCH= is given); so may any go command
# (GOFLAGS=-modfile=$PWD/bin/go.sdkpatched.mod). A plain `go build` uses
# the SDK as released. Without patch(1) or git to apply the patches, it
# says so and writes bin/go.sdkpatched.mod without the replace: the build
# then uses the SDK as released.
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
cp go.mod bin/go.sdkpatched.mod.tmp
cp go.sum bin/go.sdkpatched.sum
if command -v patch >/dev/null 2>&1; then
	apply() { patch -s -p1 -d "$out" < "$1"; }
elif command -v git >/dev/null 2>&1; then
	apply() { git apply -p1 --directory=bin/go-sdk-patched "$1"; }
else
	echo "sdk-patched: SKIP: neither patch nor git is installed; building with $mod@$ver as released (see patches/go-sdk/README.md)" >&2
	mv bin/go.sdkpatched.mod.tmp bin/go.sdkpatched.mod
	exit 0
fi
cp -R "$src" "$out"
chmod -R u+w "$out"
for p in patches/go-sdk/*.patch; do
	apply "$p"
done
printf '\nreplace %s => %s\n' "$mod" "$out" >> bin/go.sdkpatched.mod.tmp
mv bin/go.sdkpatched.mod.tmp bin/go.sdkpatched.mod
echo "sdk-patched: $mod@$ver with $(ls patches/go-sdk/*.patch | wc -l) patch(es) in $out; build with -modfile=$PWD/bin/go.sdkpatched.mod"
