#!/bin/bash
# Ferry's own CPU per Service beside Knative's on the same burst (issue 46 item 5,
# docs/scale.md "Ferry's CPU beside Knative's").
#
# One after the other, each on a fresh `ferry up --cluster-only` data dir:
#   ferry:   `ferry controller` and `ferry gateway` as processes (Ferry has no admission
#            process: `ferry up --cluster-only` has no admission webhooks);
#   knative: Knative Serving's controller, webhook, autoscaler and activator, built from
#            knative.dev/serving in test/knative (v0.42.2), with Knative's CRDs and
#            ConfigMaps from that module (config/core) applied over Ferry's CRDs.
# The burst is the same for both: N plain Services (ghcr.io/knative/helloworld-go, pods
# simulated by kwok) created by 10 `kubectl create -f` at once in a fresh namespace.
# The window is the same for both: WINDOW seconds from the start of the burst (there is no
# KIngress implementation beside Knative's controllers, so its Routes and Services never
# become Ready and there is no "all Ready" to stop at). Each process's CPU is read from
# /proc/PID/stat (utime+stime) at the start of the burst, when all N Revisions are first
# seen Ready (polled every 5 s: the milestone both systems reach) and at the end of the
# window; the idle rate of each process is read over IDLE seconds before the burst.
#   make build && hack/cpu-vs-knative.sh                 # N=100, a 90 s window
#   N=500 hack/cpu-vs-knative.sh                         # a 300 s window
# Knative's controller runs as its own Deployment's pod (node ferry-programs builds its ko://
# image; on this host its health port :8080 would clash with the autoscaler's); the webhook,
# autoscaler and activator run as processes of this host. Knative's webhook admits the burst
# (Service webhook's endpoint is this host); Ferry's side has no admission (`ferry up
# --cluster-only` has none and Ferry has no admission process). No KIngress implementation
# runs: Knative's Routes stop at IngressReady=Unknown, its SKSs without endpoints.
# At most one of these runs at once on a machine: the ports are fixed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(realpath ${FERRY:-$ROOT/bin/ferry}); N=${N:-100}; WINDOW=${WINDOW:-$((N < 400 ? 90 : 300))}; IDLE=${IDLE:-10}
D=$(mktemp -d /tmp/cpu-vs-knative.XXXXXX)
KNV=knative.dev/serving@v0.42.2
PIDS=""
cleanup() { [ -n "$PIDS" ] && kill $PIDS 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Knative's binaries, at the versions test/knative requires.
KB=${KNATIVE_BIN:-$D/kn}
if [ -z "${KNATIVE_BIN:-}" ]; then
  echo "== building Knative's controller, webhook, autoscaler, activator ($KNV) into $KB"
  (cd $ROOT/test/knative && go build -o $KB/ knative.dev/serving/cmd/controller knative.dev/serving/cmd/webhook \
    knative.dev/serving/cmd/autoscaler knative.dev/serving/cmd/activator) || exit 1
fi
MC=$(cd $ROOT/test/knative && go env GOMODCACHE)
KCORE=$MC/$KNV/config/core
KNET=$(cd $ROOT/test/knative && go list -m -f '{{.Dir}}' knative.dev/networking)/config
KCACHE=$(cd $ROOT/test/knative && go list -m -f '{{.Dir}}' knative.dev/caching)/config

# The burst: N plain Services in namespace burst, in P=10 files that 10 kubectl create at once.
for i in $(seq -f '%04g' $N); do cat <<EOF >> $D/burst-$((10#$i % 10)).yaml
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: s-$i, namespace: burst}
spec:
  template:
    spec:
      containers:
      - image: ghcr.io/knative/helloworld-go:latest
---
EOF
done

cpu() { awk -v hz=$(getconf CLK_TCK) '{print ($14 + $15) / hz}' /proc/$1/stat; }

# up NAME: a fresh `ferry up --cluster-only`; sets UP and K.
up() {
  $B up --cluster-only --data-dir $D/$1/cluster > $D/$1/up.log 2>&1 &
  UP=$!; PIDS="$PIDS $UP"
  for i in $(seq 180); do [ -s $D/$1/cluster/kubeconfig ] && grep -q "is up" $D/$1/up.log && break; sleep 1; done
  grep -q "is up" $D/$1/up.log || { echo "ferry up did not come up: $D/$1/up.log"; exit 1; }
  K=$D/$1/cluster/kubeconfig
}

# measure NAME "PID:label" ...: idle rate, the burst, the window; prints the table rows
# to $D/NAME/rows (label, CPU s over the window, idle s over the same window, CPU s up to
# when all Revisions were first seen Ready).
measure() {
  local name=$1; shift
  declare -A b0 b1 b2 br
  for p in "$@"; do b0[${p%%:*}]=$(cpu ${p%%:*}); done
  sleep $IDLE
  for p in "$@"; do b1[${p%%:*}]=$(cpu ${p%%:*}); done
  echo "   load before the burst: $(uptime | sed 's/.*load average: //')" | tee $D/$name/load
  kubectl --kubeconfig $K create namespace burst > /dev/null
  local start=$(date +%s.%N)
  local creates=""
  for f in $D/burst-*.yaml; do kubectl --kubeconfig $K create -f $f > /dev/null & creates="$creates $!"; done
  for c in $creates; do wait $c || echo "   a kubectl create failed"; done
  local created=$(date +%s.%N)
  printf '   %d Services created in %.1f s\n' $N $(echo "$created - $start" | bc)
  # Every 5 s, how many Revisions are Ready: when all are, the burst's work is mostly done.
  local allrev=""
  while [ $(echo "$(date +%s.%N) - $start < $WINDOW" | bc) = 1 ]; do
    if [ -z "$allrev" ] && [ "$(kubectl --kubeconfig $K get revisions -n burst -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True)" = $N ]; then
      allrev=$(printf %.0f $(echo "$(date +%s.%N) - $start" | bc))
      for p in "$@"; do br[${p%%:*}]=$(cpu ${p%%:*}); done
      echo "   all $N Revisions Ready within $allrev s of the burst's start (polled every 5 s)"
    fi
    sleep 5
  done
  for p in "$@"; do b2[${p%%:*}]=$(cpu ${p%%:*}); done
  : > $D/$name/rows
  for p in "$@"; do
    local pid=${p%%:*}
    echo "${p#*:}|$(echo "${b2[$pid]} - ${b1[$pid]}" | bc)|$(echo "(${b1[$pid]} - ${b0[$pid]}) * $WINDOW / $IDLE" | bc -l)|$([ -n "${br[$pid]:-}" ] && echo "${br[$pid]} - ${b1[$pid]}" | bc || echo -)" >> $D/$name/rows
  done
  # What the window held: how far each kind of object got.
  kk() { kubectl --kubeconfig $K "$@" 2>/dev/null; }
  ready() { kk get $1 -n burst -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True; }
  {
    echo "   at the end of the window ($WINDOW s from the burst):"
    echo "     services $(kk get ksvc -n burst --no-headers | wc -l) (Ready $(ready ksvc)), configurations $(kk get configurations -n burst --no-headers | wc -l) (Ready $(ready configurations)), revisions $(kk get revisions -n burst --no-headers | wc -l) (Ready $(ready revisions)), routes $(kk get routes -n burst --no-headers | wc -l) (Ready $(ready routes))"
    echo "     deployments $(kk get deployments -n burst --no-headers | wc -l), pods $(kk get pods -n burst --no-headers | wc -l), kingresses $(kk get ingresses.networking.internal.knative.dev -n burst --no-headers | wc -l), podautoscalers $(kk get podautoscalers -n burst --no-headers | wc -l), serverlessservices $(kk get serverlessservices -n burst --no-headers | wc -l), k8s services $(kk get services -n burst --no-headers | wc -l)"
  } | tee $D/$name/objects
  # Why what is not Ready is not: each kind's conditions, counted.
  for r in ksvc configurations revisions routes podautoscalers serverlessservices; do
    kk get $r -n burst -o jsonpath='{range .items[*]}{range .status.conditions[?(@.status!="True")]}{.type}={.status} {.reason}: {.message}{"\n"}{end}{end}' |
      sort | uniq -c | sed "s|^|$r |"
  done > $D/$name/conditions
}

# stop PID...: ends a run's processes before the next one starts.
stop() { kill "$@" 2>/dev/null; for p in "$@"; do while kill -0 $p 2>/dev/null; do sleep 0.2; done; done; }

echo "== N=$N, window $WINDOW s from the start of the burst, idle rate over $IDLE s before it; $D"

echo "== ferry: ferry up --cluster-only, ferry controller, ferry gateway"
mkdir -p $D/ferry
up ferry
$B controller --kubeconfig $K --metrics-addr 127.0.0.1:19090 --health-addr 127.0.0.1:19082 \
  --stats-addr 127.0.0.1:19084 --log-format console > $D/ferry/controller.log 2>&1 &
FC=$!
$B gateway --kubeconfig $K --addr 127.0.0.1:19180 --local-addr 127.0.0.1:19181 --simulated-pods \
  --metrics-addr 127.0.0.1:19091 --health-addr 127.0.0.1:19083 --autoscaler 127.0.0.1:19084 \
  --log-format console > $D/ferry/gateway.log 2>&1 &
FG=$!
PIDS="$PIDS $FC $FG"
for i in $(seq 60); do curl -sf http://127.0.0.1:19082/readyz > /dev/null && curl -sf http://127.0.0.1:19083/readyz > /dev/null && break; sleep 1; done
sleep 5
measure ferry "$UP:cluster" "$FC:ferry controller" "$FG:ferry gateway"
stop $FC $FG $UP

echo "== knative: ferry up --cluster-only, Knative's controller (a pod), webhook, autoscaler, activator"
mkdir -p $D/knative
# From test/knative, so that ko://knative.dev/serving/cmd/controller builds at its versions.
cd $ROOT/test/knative; up knative; cd $ROOT
ka() { kubectl --kubeconfig $K "$@"; }
ka apply -f $KCORE/100-namespace.yaml > /dev/null
# Knative's CRDs over Ferry's (same groups, Knative's schemas), and the ones Ferry lacks.
ka apply --server-side --force-conflicts -f $KCORE/300-resources/ -f $KNET/certificate.yaml -f $KNET/domain-claim.yaml \
  -f $KNET/ingress.yaml -f $KNET/serverlessservice.yaml -f $KCACHE/image.yaml > /dev/null
sleep 2
ka apply -f $KCORE/200-roles/ -f $KCORE/200-serviceaccount.yaml -f $KCORE/configmaps/ -f $KNET/config-network.yaml \
  -f $KCORE/webhooks/secret.yaml -f $KCORE/300-knativecertificate.yaml > /dev/null
# No network: the Services' image is not resolved to a digest; the queue-proxy image is one
# kwok simulates (a ko:// one would run); no metrics backend, so that the processes on this
# host do not all listen on :9090.
ka -n knative-serving patch configmap config-deployment --type merge -p \
  '{"data":{"queue-sidecar-image":"ghcr.io/knative/queue:v0.42.2","registries-skipping-tag-resolving":"ghcr.io,kind.local,ko.local,dev.local"}}' > /dev/null
ka -n knative-serving patch configmap config-observability --type merge -p \
  '{"data":{"metrics.backend-destination":"none","metrics.request-metrics-backend-destination":"none"}}' > /dev/null
# The controller runs as Knative's own Deployment, a pod on node ferry-programs (its
# ko:// image built by ferry up; no CPU limit, as Ferry's processes have none): on this host
# its health port, :8080, would clash with the autoscaler's fixed :8080.
python3 - $KCORE/deployments/controller.yaml > $D/knative/controller.yaml <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
for d in docs:
    if "kind: Deployment" in d:
        out, skip = [], False
        for line in d.split("\n"):
            if line.strip() == "limits:":
                skip = True; ind = len(line) - len(line.lstrip()); continue
            if skip and (len(line) - len(line.lstrip())) > ind: continue
            skip = False; out.append(line)
        d = "\n".join(out)
    print(d); print("---")
PY
ka apply -f $D/knative/controller.yaml > /dev/null
# The webhook, autoscaler and activator as processes of this host, as their Deployments
# would run them; POD_IP is this host's address (the autoscaler publishes it in Endpoints,
# where a loopback one is refused). Pods with POD_IP from status.podIP do not start on
# ferry-programs (virtual-kubelet waits), hence not as pods.
HOSTIP=$(hostname -I | awk '{print $1}')
kn() { # kn NAME PROFILING_PORT [ENV=...]
  local n=$1 pp=$2; shift 2
  env SYSTEM_NAMESPACE=knative-serving POD_NAME=$n-0 POD_IP=$HOSTIP CONFIG_LOGGING_NAME=config-logging \
    CONFIG_OBSERVABILITY_NAME=config-observability METRICS_DOMAIN=knative.dev/internal/serving \
    PROFILING_PORT=$pp "$@" $KB/$n --kubeconfig $K > $D/knative/$n.log 2>&1 &
}
kn webhook 18009 WEBHOOK_NAME=webhook WEBHOOK_PORT=18443; KW=$!
kn autoscaler 18010; KA=$!
kn activator 18011 GOGC=500; KX=$!
PIDS="$PIDS $KW $KA $KX"
# The webhook admits as on a cluster: the API server routes to a Service's endpoints
# (--enable-aggregator-routing), so Service webhook points at this host's :18443.
ka apply -f - > /dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: webhook, namespace: knative-serving}
spec:
  ports: [{name: https-webhook, port: 443, targetPort: 18443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: webhook, namespace: knative-serving}
subsets:
- addresses: [{ip: $HOSTIP}]
  ports: [{name: https-webhook, port: 18443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: webhook-host, namespace: knative-serving, labels: {kubernetes.io/service-name: webhook}}
addressType: IPv4
endpoints: [{addresses: [$HOSTIP], conditions: {ready: true}}]
ports: [{name: https-webhook, port: 18443, protocol: TCP}]
EOF
for i in $(seq 60); do curl -sk https://127.0.0.1:18443/ -o /dev/null && break; sleep 1; done
sleep 3
ka apply -f $KCORE/webhooks/defaulting.yaml -f $KCORE/webhooks/resource-validation.yaml \
  -f $KCORE/webhooks/configmap-validation.yaml > /dev/null
for i in $(seq 600); do
  [ "$(ka -n knative-serving get pods -l app=controller -o jsonpath='{.items[*].status.containerStatuses[0].ready}')" = true ] && break; sleep 1
done
# The controller's process: the child of the runc that ferry up started for it.
KC=""
for r in $(pgrep -P $UP -x runc); do c=$(pgrep -P $r); [ -n "$c" ] && grep -q "ko-app/controller" /proc/$c/cmdline 2>/dev/null && KC=$c; done
[ -n "$KC" ] || { echo "Knative's controller pod did not start; $D/knative"; ka -n knative-serving get pods -o wide; exit 1; }
sleep 20
for p in $KC $KW $KA $KX; do kill -0 $p 2>/dev/null || { echo "a Knative process exited ($p); logs in $D/knative"; exit 1; }; done
measure knative "$UP:cluster" "$KC:knative controller" "$KW:knative webhook" "$KA:knative autoscaler" "$KX:knative activator"
stop $KW $KA $KX $UP

echo
echo "== CPU over the window ($WINDOW s from the burst of $N Services), /proc utime+stime"
printf '%-34s %9s %13s %15s %22s\n' process "CPU s" "ms / Service" "idle-rate s" "to all Rev. Ready: s"
sum() { awk -F'|' -v re="$2" -v c=${3:-2} '$1 ~ re {s += $c} END {printf "%.2f", s}' $D/$1/rows; }
for r in ferry knative; do
  while IFS='|' read -r label used idle torev; do
    printf '%-34s %9.2f %13.1f %15.2f %22s\n' "$label" $used $(echo "$used * 1000 / $N" | bc -l) $idle "$torev"
  done < $D/$r/rows
done
F=$(sum ferry '^ferry'); KT=$(sum knative '^knative'); KNW=$(sum knative '^knative (controller|autoscaler|activator)')
printf '%-34s %9.2f %13.1f\n' "Ferry's own (controller+gateway)" $F $(echo "$F * 1000 / $N" | bc -l)
printf '%-34s %9.2f %13.1f\n' "Knative's (all four)" $KT $(echo "$KT * 1000 / $N" | bc -l)
printf '%-34s %9.2f %13.1f\n' "Knative's without the webhook" $KNW $(echo "$KNW * 1000 / $N" | bc -l)
printf "Ferry's own / Knative's: %.2f (without the webhook: %.2f)\n" $(echo "$F / $KT" | bc -l) $(echo "$F / $KNW" | bc -l)
FR=$(sum ferry '^ferry' 4); KR=$(sum knative '^knative' 4); KRW=$(sum knative '^knative (controller|autoscaler|activator)' 4)
if grep -q '|-$' $D/ferry/rows $D/knative/rows; then
  echo "Up to all Revisions Ready: not reached by both within the window (Ferry's own $FR s, Knative's $KR s where reached)"
else
  printf "Up to all Revisions Ready: Ferry's own %.2f s (%.1f ms / Service), Knative's %.2f s (%.1f ms / Service; without the webhook %.2f s), Ferry's / Knative's %.2f (without the webhook %.2f)\n" \
    $FR $(echo "$FR * 1000 / $N" | bc -l) $KR $(echo "$KR * 1000 / $N" | bc -l) $KRW $(echo "$FR / $KR" | bc -l) $(echo "$FR / $KRW" | bc -l)
fi
echo "logs: $D"
