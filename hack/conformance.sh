#!/usr/bin/env bash
# make conformance: Knative Serving's own conformance suite (knative.dev/serving v0.42.2,
# test/conformance/api/v1 and test/conformance/runtime, build tag e2e) against `ferry up`.
# docs/conformance.md has what it runs, what it skips and why, and the last results.
#
#   make conformance                          # the whole run, Go's summary at the end
#   RUN='TestMustEnvVars|TestCmdArgs' make conformance    # a few tests (go test -run)
#   KEEP=1 make conformance                   # keep the data directory and logs
#
# Everything runs from test/knative, the module that requires knative.dev/serving: the
# suite's packages build there, and so do Knative's test images, which `ferry up` builds
# with the go command from its working directory when --local-image maps
# ko.local/<name>:latest to ko://knative.dev/serving/test/test_images/<name>.
set -euo pipefail
# All of it is one function, called on the last line: bash then has read the whole
# file before it runs, so editing the script during a run cannot break that run.
main() {
cd "$(dirname "$0")/.."
root=$PWD
ferry=$root/bin/ferry
[ -x "$ferry" ] || { echo "no $ferry: run make build (make conformance does)" >&2; exit 1; }

# The suite checks what only runc containers give each pod (its own network namespace,
# mounts, cgroups, user): without them `ferry up` runs pods as plain processes and the
# runtime tests fail, so it does not start. Run alone, that is a failure; under
# hack/test.sh (FERRY_SKIPPED_FILE) it is a skip that its summary lists, unless
# FERRY_REQUIRE_ALL is set (CI).
missing=() packages=()
[ "$(uname -s)" = Linux ] || missing+=(Linux)
[ "$(id -u)" = 0 ] || missing+=(root)
for c in runc:runc ip:iproute2 nft:nftables; do
  command -v "${c%%:*}" >/dev/null || { missing+=("${c%%:*}"); packages+=("${c#*:}"); }
done
if [ ${#missing[@]} -gt 0 ]; then
  why=$(printf '%s, ' "${missing[@]}") why="isolated programs need ${why%, }"
  [ ${#packages[@]} -eq 0 ] || why+=" (apt-get install -y ${packages[*]})"
  required=false   # FERRY_REQUIRE_ALL true as Go's strconv.ParseBool reads it
  case ${FERRY_REQUIRE_ALL:-} in 1 | t | T | true | TRUE | True) required=true ;; esac
  if [ -z "${FERRY_SKIPPED_FILE:-}" ] || $required; then
    echo "conformance: cannot run: $why" >&2; exit 1
  fi
  echo "Knative's conformance suite (make conformance): $why" >>"$FERRY_SKIPPED_FILE"
  echo "conformance: skipped, not run: $why"
  exit 0
fi

# The spoofing client dials -ingressendpoint at the nodePort of the ingress Service's
# port 80 (knative.dev/pkg/test/ingress), so the gateway listens on a port inside the
# apiserver's default nodePort range (30000-32767), and a Service below claims it.
gw_port=${GW_PORT:-31080}
gw_local_port=${GW_LOCAL_PORT:-31081}
gw_https_port=${GW_HTTPS_PORT:-31443}
parallel=${PARALLEL:-4}   # tests mostly wait on polls; 4 at a time per package fits 2 cores
timeout=${TIMEOUT:-40m}

# Tests that cannot pass on this machine, each with why. Everything not listed here
# that fails is a gap in Ferry (docs/conformance.md), not something to skip.
skip_names=() skip_reasons=()
skip() { skip_names+=("$1"); skip_reasons+=("$2"); }
# None: with runc each pod has the network and mount namespaces, cgroups, user and
# /dev the suite checks. A test goes here as
#   skip TestName "the isolation it needs that this machine cannot give"
# A gap in Ferry itself is never skipped: it is fixed.

data=$(mktemp -d "${TMPDIR:-/tmp}/ferry-conformance.XXXXXX")
up_pid= test_pids=()
# Always stop ferry up (it stops the pods it runs), even on Ctrl-C or a failed step.
stop_ferry() {
  local rc=$?
  # go test first (on Ctrl-C or TERM), so that no test outlives the cluster; its child
  # is the test binary: end that, then go test.
  for pid in "${test_pids[@]}"; do pkill -TERM -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    echo "Stopping ferry up (pid $up_pid) ..."
    kill -INT "$up_pid" 2>/dev/null || true
    # Give it a minute to stop its pods and etcd cleanly, then end it.
    for _ in $(seq 60); do kill -0 "$up_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-}" = 1 ] || [ "$rc" -ne 0 ]; then
    echo "Logs and data: $data (ferry up: $data/up.log, $data/ferry.log; suite: $data/api-v1.log, $data/runtime.log)"
  else
    rm -rf "$data"
  fi
  exit "$rc"
}
trap stop_ferry EXIT
trap 'exit 130' INT TERM

cd "$root/test/knative"
# go list -m gives no Dir for a module not yet in the module cache (a fresh machine).
go mod download knative.dev/serving
serving_dir=$(go list -m -f '{{.Dir}}' knative.dev/serving)

# Knative's test images, as the suite names them (-dockerrepo=ko.local, -tag=latest:
# ko.local/<last path element>:latest), each mapped to its Go package. Only when this
# ferry has --local-image; without it every pod is kwok's and the tests that check an
# answer fail on "Hello from revision ... simulated by kwok".
local_images=()
# (The help is read whole first: grep -q would stop reading early, and with pipefail
# the ferry it cut off would fail the test.)
up_help=$("$ferry" up --help)
if [[ $up_help == *--local-image* ]]; then
  mapfile -t image_pkgs < <(go list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' knative.dev/serving/test/test_images/...)
  for pkg in "${image_pkgs[@]}"; do
    local_images+=(--local-image "ko.local/${pkg##*/}:latest=ko://$pkg")
  done
  echo "Mapping ${#image_pkgs[@]} test images to their Go packages (--local-image ... =ko://...)"
  # ferry up builds each one when its first pod is scheduled (go build -trimpath,
  # CGO_ENABLED=0): compiling them now with those flags (several packages: compiled,
  # not linked) fills the go command's cache, so that no test waits on a cold compile.
  echo "Compiling the test images ..."
  CGO_ENABLED=0 go build -trimpath "${image_pkgs[@]}"
else
  echo "This ferry up has no --local-image: pods are simulated by kwok, and tests that check an answer fail."
fi
# The suite's own test binaries, built before ferry up starts so that the compile does
# not race the cluster for the CPU.
echo "Building the suite's test binaries ..."
go test -tags=e2e -count=1 -run '^$' knative.dev/serving/test/conformance/api/v1 knative.dev/serving/test/conformance/runtime >/dev/null

echo "Starting ferry up in $data (gateway 127.0.0.1:$gw_port) ..."
# exec: $! is ferry up itself, which the trap stops.
# --program-isolation=runc: ferry up refuses rather than fall back to plain processes.
( exec "$ferry" up --data-dir "$data" --program-isolation runc \
    --gateway-addr "127.0.0.1:$gw_port" --gateway-local-addr "127.0.0.1:$gw_local_port" \
    --gateway-https-addr "127.0.0.1:$gw_https_port" --dashboard-addr 0 "${local_images[@]}" ) >"$data/up.log" 2>&1 &
up_pid=$!
for i in $(seq 300); do
  grep -q "Ferry is up" "$data/up.log" && break
  if ! kill -0 "$up_pid" 2>/dev/null || [ "$i" -eq 300 ]; then
    echo "ferry up did not come up:" >&2; tail -20 "$data/up.log" >&2; exit 1
  fi
  sleep 1
done
export KUBECONFIG=$data/kubeconfig

# What the suite expects on the cluster: Knative's own fixtures (namespaces serving-tests
# and serving-tests-alt, ConfigMap conformance-test-configmap and Secret
# conformance-test-secret with testKey=testValue), and the ingress Service whose port 80
# nodePort is the gateway's port (GATEWAY_OVERRIDE/GATEWAY_NAMESPACE_OVERRIDE name it;
# no selector: nothing behind it, only the nodePort is read).
go run ./cmd/conformance-fixtures --kubeconfig "$KUBECONFIG" --ingress ferry-system/conformance-ingress \
  --http-node-port "$gw_port" --https-node-port "$gw_https_port" \
  "$serving_dir/test/config/cluster-resources.yaml" "$serving_dir/test/config/test-resources.yaml"

skip_re=
if [ ${#skip_names[@]} -gt 0 ]; then
  echo "Skipped (named with why):"
  for i in "${!skip_names[@]}"; do echo "  ${skip_names[$i]}: ${skip_reasons[$i]}"; done
  # go test -skip splits a pattern at each /, so this skips top-level tests only.
  skip_re="^($(IFS='|'; echo "${skip_names[*]}"))\$"
fi

# One go test per package, side by side: go test buffers a package's output until it
# ends when it runs several, and a log that grows is how a slow test is found.
run_package() { # LOG PACKAGE
  # exec: the background job's pid is go test's own, for the trap.
  SYSTEM_NAMESPACE=ferry-system GATEWAY_OVERRIDE=conformance-ingress GATEWAY_NAMESPACE_OVERRIDE=ferry-system \
  exec go test -v -tags=e2e -count=1 -timeout "$timeout" -parallel "$parallel" \
    ${RUN:+-run "$RUN"} ${skip_re:+-skip "$skip_re"} "$2" \
    -args \
    --kubeconfig="$KUBECONFIG" \
    --ingressendpoint=127.0.0.1 \
    --dockerrepo=ko.local \
    --disable-logstream \
    --enable-beta \
    >"$1" 2>&1
}
logs=("$data/api-v1.log" "$data/runtime.log")
echo "Running the suite (logs: ${logs[*]}) ..."
start=$(date +%s)
run_package "${logs[0]}" knative.dev/serving/test/conformance/api/v1 & test_pids=($!)
run_package "${logs[1]}" knative.dev/serving/test/conformance/runtime & test_pids+=($!)
rc=0
for pid in "${test_pids[@]}"; do wait "$pid" || rc=1; done
test_pids=()
took=$(( $(date +%s) - start ))

# Go's summary: each top-level test's result and each package's line.
echo
cat "${logs[@]}" | grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)' || true
# And each failing test's last line from its own _test.go file (for t.Fatal, its
# message; helpers such as the prober log after it), by following go test -v's
# "=== RUN/CONT/NAME <test>" markers through interleaved output.
if grep -q -- '--- FAIL' "${logs[@]}"; then
  echo
  echo "Failures (the test's last log line):"
  cat "${logs[@]}" | awk '/^=== (RUN|CONT|NAME) / { cur = $3; next }
       /^ +[^ ]+_test\.go:[0-9]+: / { l = $0; sub(/^ +/, "", l); last[cur] = substr(l, 1, 300); next }
       /^ *--- FAIL: / && ($3 in last) { printf "  %s: %s\n", $3, last[$3] }'
fi
count() { cat "${logs[@]}" | grep -c "^--- $1" || true; }
echo
echo "The suite took ${took}s; $(count SKIP) tests skipped themselves, ${#skip_names[@]} were skipped here (named above)."
echo "conformance: $(count PASS) passed, $(count FAIL) failed, $(( $(count SKIP) + ${#skip_names[@]} )) skipped"
exit $rc
}

main "$@"
