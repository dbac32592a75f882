#!/usr/bin/env bash
# Ferry's whole test suite: generated files current, vet, gofmt, unit tests (under the
# race detector) and the integration tests against the embedded control plane.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }
# What make test needs beyond Go and make (the README's Set up says the same).
install="apt-get install -y runc iproute2 nftables chromium"

step "generated files are current (make generate)"
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
# Tests that need what this machine lacks (runc containers, a browser) skip, each
# writing a line here that the summary at the end repeats; FERRY_REQUIRE_ALL=1 (CI)
# fails them instead (test/integration/machine_helpers_test.go, hack/conformance.sh).
export FERRY_SKIPPED_FILE="$snapshot/skipped"
generated=$(git ls-files 'api/**/zz_generated.deepcopy.go' 'config/crd/bases/*.yaml')
tar -cf "$snapshot/before.tar" $generated
make --no-print-directory generate >/dev/null
mkdir "$snapshot/before" && tar -xf "$snapshot/before.tar" -C "$snapshot/before"
stale=0
for f in $generated; do
  if ! cmp -s "$f" "$snapshot/before/$f"; then echo "stale: $f"; stale=1; fi
done
if [ "$stale" = 1 ]; then echo "generated files were stale: commit the result of 'make generate'"; exit 1; fi

step "make targets fail when what they run fails (make simulate pipes into grep)"
if make --no-print-directory simulate GO=false SEEDS=1 >/dev/null 2>&1; then
  echo "make simulate succeeded although its go test failed"; exit 1
fi

step "go vet"
go vet ./...

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "not gofmt'ed:"; echo "$unformatted"; exit 1; fi

step "unit tests (-race)"
# Every package with tests but the integration tests, which link the control plane.
# cmd/ferry links the embedded control plane too: its flag tests run without -race,
# which would rebuild all of Kubernetes instrumented for one goroutine.
# The convergence simulation runs each seed on one goroutine: -race checks that runs
# share nothing on a few seeds, and its 14,000-run short form runs without it below.
units=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v -e '/test/integration$' -e '/cmd/ferry$' -e '/internal/convergence$' || true)
if [ -n "$units" ]; then go test -race -count=1 $units; fi
FERRY_SIM_SEEDS=25 go test -race -count=1 -run 'TestSimulate|TestRunIsAFunctionOfItsSeed' ./internal/convergence/
go test -count=1 ./cmd/ferry

step "convergence simulation (14,000 runs, and each safeguard switched off in turn)"
go test -count=1 -timeout 30m ./internal/convergence/

step "the KPA decider against Knative's own (test/knative, a module of its own: docs/autoscaling.md)"
(cd test/knative && go vet ./... && go test -count=1 ./...)

step "integration tests (embedded kube-apiserver, etcd, controller-manager, scheduler, kwok)"
# Some tests run `ferry controller` and `ferry gateway` as their own processes, as on a
# cluster: they use bin/ferry. -ldflags gives the embedded API server its real version,
# as `make build` does.
make --no-print-directory build
# The control plane's logs fill the output: on failure, repeat the failing tests' own
# lines last, where a reader of the tail looks first.
out="$snapshot/integration.log"
if ! FERRY_BIN="$PWD/bin/ferry" go test -count=1 -timeout 40m -ldflags "$(make --no-print-directory -s print-ldflags)" ./test/integration/ 2>&1 | tee "$out"; then
  step "integration tests failed; their failures again:"
  grep -E -- '^\s*--- FAIL|^panic:|^\s+[a-z0-9_]+_test\.go:[0-9]+:|^FAIL|test timed out' "$out" | tail -n 60
  exit 1
fi

step "Knative's conformance suite against ferry up (make conformance, docs/conformance.md)"
# Knative's own api/v1 and runtime tests, its test images running as real programs on
# ferry up's program node in runc containers: without those it skips.
./hack/conformance.sh

if [ -s "$FERRY_SKIPPED_FILE" ]; then
  step "passed, but NOT everything ran: skipped for what this machine lacks"
  sed 's/^/  /' "$FERRY_SKIPPED_FILE"
  echo "To run them too, install what make test needs (as root, on Debian) and run it again:"
  echo "  $install"
else
  step "passed: nothing skipped for what the machine lacks"
fi
