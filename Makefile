# opentool-host — build, run and test. Needs only Go, make and gcc.
GO      ?= go
ADDR    ?= 127.0.0.1:9627
PLUGINS := $(notdir $(patsubst %/,%,$(wildcard plugins/*/)))
BINS    := $(addprefix plugins/opentool-plugin-,$(PLUGINS))
TESTFLAGS ?= -race -count=1 -timeout 20m

.PHONY: all build host plugins run test vet fmt fmt-check bench proto clean

all: build

build: host plugins

host:
	$(GO) build -o bin/opentool-host ./cmd/opentool-host

plugins: $(PLUGINS:%=plugin-%)

plugin-%:
	$(GO) build -o plugins/opentool-plugin-$* ./plugins/$*

run: build
	./bin/opentool-host run --dir plugins --addr $(ADDR)

test: build vet fmt-check
	$(GO) test $(TESTFLAGS) ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

proto:
	./scripts/genproto.sh

clean:
	rm -rf bin $(BINS)
