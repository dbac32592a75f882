# Ferry's build. Every tool is fetched by the go command from the module proxy.
# bash with pipefail: a recipe that pipes a test into a filter fails when the test does
# (`make simulate` used to end in grep's success whatever the simulation said).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# The go command; `make simulate GO=false` checks that a failing run fails the target.
GO ?= go
CONTROLLER_GEN ?= go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
# The embedded kube-apiserver reports this version (kubectl refuses to parse the default).
K8S_VERSION := v1.37.2
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
	-X github.com/ferry-serving/ferry/internal/version.Version=$(VERSION)

.PHONY: generate build up test vet verify-generated
generate:
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true,maxDescLen=0 paths=./api/... output:crd:artifacts:config=config/crd/bases
	go run ./hack/crdfixup config/crd/bases/*.yaml

build:
	go build -ldflags "$(LDFLAGS)" -o bin/ferry ./cmd/ferry

up: build
	./bin/ferry up

# kubectl runs an executable named kubectl-ferry from PATH as `kubectl ferry`: this links
# one to bin/ferry in PLUGIN_DIR ($(go env GOPATH)/bin; `make plugin PLUGIN_DIR=bin` to
# keep it in the tree and put bin/ on PATH). Then: kubectl ferry explain ksvc NAME.
PLUGIN_DIR ?= $(shell go env GOPATH)/bin
.PHONY: plugin
plugin: build
	mkdir -p $(PLUGIN_DIR)
	ln -sf $(abspath bin/ferry) $(PLUGIN_DIR)/kubectl-ferry
	@echo "kubectl ferry → $(PLUGIN_DIR)/kubectl-ferry → $(abspath bin/ferry); $(PLUGIN_DIR) must be on PATH"

# Container images without Docker (docs/install.md): bin/images/ferry-controller.tar and
# ferry-gateway.tar, each a static ferry built without the local cluster on an empty
# base, written by hack/image. The commit's time stamps them, so a commit always gives
# the same images. No DWARF or symbol table (-s -w: 30% smaller; panics still name
# functions and lines). IMAGE_ARCH is the GOARCH (e.g. make image IMAGE_ARCH=arm64).
IMAGE_ARCH ?= amd64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
.PHONY: image
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -tags nolocalcluster -trimpath \
		-ldflags "-s -w $(LDFLAGS)" -o bin/images/linux-$(IMAGE_ARCH)/ferry ./cmd/ferry
	go run ./hack/image -binary=bin/images/linux-$(IMAGE_ARCH)/ferry -arch=$(IMAGE_ARCH) -out=bin/images \
		-version=$(VERSION) -revision=$(shell git rev-parse HEAD 2>/dev/null) -created=$(SOURCE_DATE_EPOCH)

vet:
	go vet ./...

# The integration tests link the embedded control plane into one test binary
# (test/integration); the other packages test pure logic, some under -race.
test:
	./hack/test.sh

print-ldflags:
	@echo '$(LDFLAGS)'

# The long forms of the production tests (CI runs the short ones within `make test`):
# a leader killed mid-burst of 500 Services, and each fault during a burst of 500.
LONG_TESTS = FERRY_BIN=$(abspath bin/ferry) go test -count=1 -timeout 90m -ldflags "$(LDFLAGS)" ./test/integration/ -v
.PHONY: test-ha-long test-faults-long
test-ha-long: build
	FERRY_HA_N=500 $(LONG_TESTS) -run 'TestHAControllerFailover'
test-faults-long: build
	FERRY_FAULT_N=500 $(LONG_TESTS) -run 'TestFault'

# The gateway's fuzz tests, each for FUZZTIME (CI runs their seeds within `make test`):
# the lean HTTP/1.1 loop's parser against net/http's server, host routing, and the
# pods' plain answers read in place against http.ReadResponse.
FUZZTIME ?= 2m
.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/gateway/http1/
	$(GO) test -run '^$$' -fuzz '^FuzzRouteHost$$' -fuzztime $(FUZZTIME) ./internal/gateway/proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzPlainResponse$$' -fuzztime $(FUZZTIME) ./internal/gateway/proxy/

# ferry soak's nightly form (make test runs two minutes, TestSoak): ten minutes of load
# on a fleet of Services on a local cluster while it changes and every fault strikes;
# the reports go to SOAK_REPORT. docs/soak.md has the hour's.
SOAK_DURATION ?= 10m
SOAK_REPORT ?= soak-report
.PHONY: soak
soak: build
	bin/ferry soak --duration $(SOAK_DURATION) --faults all --report-dir $(SOAK_REPORT)

# The convergence simulation's long form: SEEDS seeds from FIRST in each of its seven
# families, or in FAMILIES (comma-separated) (CI runs 2,000 from 1). It prints how many
# ran and every failing seed, with how to replay it.
SEEDS ?= 250000
FIRST ?= 1
FAMILIES ?=
.PHONY: simulate
simulate:
	FERRY_SIM_SEEDS=$(SEEDS) FERRY_SIM_FIRST=$(FIRST) FERRY_SIM_FAMILIES=$(FAMILIES) $(GO) test -count=1 -timeout 0 -run 'TestSimulate' -v ./internal/convergence/ | { grep -v '^ *[0-9.]*s #' || true; }

# Knative Serving's own conformance suite (api/v1 and runtime, knative.dev/serving
# v0.42.2) against `ferry up`, from test/knative; docs/conformance.md.
.PHONY: conformance
conformance: build
	./hack/conformance.sh

# The dashboard's chart library (internal/dashboard/assets/static/uplot), embedded in
# the binary because a user's machine may have no internet: uPlot from npm's registry,
# this version, this tarball's sha256 (npm pack uplot@$(UPLOT_VERSION)).
UPLOT_VERSION := 1.6.32
UPLOT_SHA256 := 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
.PHONY: dashboard-assets
dashboard-assets:
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	curl -fsSL -o "$$tmp/uplot.tgz" https://registry.npmjs.org/uplot/-/uplot-$(UPLOT_VERSION).tgz && \
	echo "$(UPLOT_SHA256)  $$tmp/uplot.tgz" | sha256sum -c - && \
	tar -xzf "$$tmp/uplot.tgz" -C "$$tmp" && \
	cp "$$tmp/package/dist/uPlot.iife.min.js" "$$tmp/package/dist/uPlot.min.css" "$$tmp/package/LICENSE" internal/dashboard/assets/static/uplot/
