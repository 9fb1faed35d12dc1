# The README's two commands are `make run` and `make test`; everything else supports them.
SHELL := /bin/bash
GO ?= go
OUT := build/out
WASM := $(OUT)/filter.wasm
CONFIG ?= examples/gateway.yaml
FUZZTIME ?= 5s

.PHONY: all build wasm run test test-unit test-wasm test-python fuzz bench bench-all e2e-deps sdk-deps lint clean oci reliability

all: build

## wasm: build/out/filter.wasm with the standard Go toolchain (stripped reactor module)
wasm: $(WASM)

$(WASM): $(shell find filter shared -name '*.go' -not -name '*_test.go' 2>/dev/null) go.mod go.sum
	@mkdir -p $(OUT)
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o $@ ./filter

## build: the wasm module and every command
build: wasm
	$(GO) build -o $(OUT)/ ./tokensvc/cmd/... ./wasmtest/cmd/... ./examples/...

## run: the quick start (local gateway + demo MCP server + OpenID provider on loopback)
run:
	bash build/run-quickstart.sh $(CONFIG)

## test: every test (what .ci/run calls). go test replays every fuzz target's seed corpus
## (testdata/fuzz); exploring for new inputs is `make fuzz`, which CI does not run
## (docs/testing.md says why).
test: wasm e2e-deps sdk-deps
	$(GO) vet ./...
	GATEWAY_WASM=$(CURDIR)/$(WASM) $(GO) test -count=1 -timeout 30m ./...
	$(MAKE) test-python

## test-python: the Python SDK's tests (sdk/python) with Debian's python3
PYTHON ?= /usr/bin/python3
test-python: sdk-deps
	PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m pytest -p no:cacheprovider -q sdk/python

## sdk-deps: Debian's python3 packages for the Python SDK and its tests (apt-get, only when missing)
sdk-deps:
	@PYTHON=$(PYTHON) bash sdk/python/install-deps.sh

## e2e-deps: Node packages and Node 22 used by the end-to-end tests (installed from npm), and
## Debian's chromium for the demo app's browser test (apt-get, only when missing)
e2e-deps:
	@if [ -f wasmtest/e2e/node/package.json ]; then bash wasmtest/e2e/node/install.sh; fi
	@bash build/install-chromium.sh >/dev/null

## fuzz: every fuzz target explores for FUZZTIME (5s by default; the campaign in RELIABILITY.md
## used FUZZTIME=10m). A finding is written under testdata/fuzz and becomes a regression seed.
fuzz:
	@bash build/fuzz.sh $(FUZZTIME)

## reliability: the fault, load and hostile-traffic suite in full (figures in RELIABILITY.md);
## make test runs its short version. Needs PostgreSQL (GATEWAY_TEST_POSTGRES_DSN) for the
## outage tests.
GATEWAY_TEST_POSTGRES_DSN ?= postgres://root@127.0.0.1:5432/test?sslmode=disable
reliability: wasm e2e-deps
	@mkdir -p $(OUT)
	set -o pipefail; GATEWAY_WASM=$(CURDIR)/$(WASM) GATEWAY_RELIABILITY=full GATEWAY_TEST_POSTGRES_DSN='$(GATEWAY_TEST_POSTGRES_DSN)' \
		$(GO) test -count=1 -timeout 60m -v ./wasmtest/e2e/reliability/ | tee $(OUT)/reliability.log | grep -E '^(---|ok|FAIL|PASS)|RELIABILITY'

## bench: the filter's benchmarks natively, under V8 (Node 22's node:wasi), under wazero and as
## whole streams in the wasmtest host, with a summary table (build/bench.sh; BENCHMARKS.md,
## "Performance work (issue 17)"). BENCHTIME, COUNT and BENCH are passed to it.
bench: wasm
	GATEWAY_WASM=$(CURDIR)/$(WASM) GO=$(GO) bash build/bench.sh

## bench-all: every benchmark of every package (go test -bench . ./...)
bench-all: wasm
	GATEWAY_WASM=$(CURDIR)/$(WASM) $(GO) test -run '^$$' -bench . -benchmem ./...

## bench-gateway: the local gateway's end-to-end overhead against a bare httputil.ReverseProxy
## (same upstream, same load generator, alternating rounds); BENCHMARKS.md, "Local gateway overhead"
.PHONY: bench-gateway
bench-gateway: wasm
	GATEWAY_WASM=$(CURDIR)/$(WASM) $(GO) run ./wasmtest/cmd/gatewaybench -rounds 5 -duration 3s

## lint: gofmt, go vet and staticcheck, for linux and for the filter's wasip1 build
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(OUT)/tools/staticcheck
$(STATICCHECK):
	GOBIN=$(CURDIR)/$(OUT)/tools GOOS= GOARCH= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	gofmt -l $$(git ls-files '*.go') | (! grep .)
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./filter/... ./shared/...
	$(STATICCHECK) ./...
	GOOS=wasip1 GOARCH=wasm $(STATICCHECK) ./filter/... ./shared/...

## oci: OCI image layouts in build/out/oci, without a container engine (build/cmd/oci): the module as a
## Wasm OCI artifact and as a Docker-compatible image with plugin.wasm, and the token service image
## (static, user 65532, CA bundle, no shell). Push with `crane push` (docs/istio.md).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
OCI_ARCH ?= $(shell $(GO) env GOARCH)
oci: wasm
	CGO_ENABLED=0 GOOS=linux GOARCH=$(OCI_ARCH) $(GO) build -trimpath -ldflags='-s -w' -o $(OUT)/linux_$(OCI_ARCH)/tokensvc ./tokensvc/cmd/tokensvc
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./build/cmd/oci -wasm $(WASM) -tokensvc $(OUT)/linux_$(OCI_ARCH)/tokensvc -arch $(OCI_ARCH) -out $(OUT)/oci

clean:
	rm -rf $(OUT)
