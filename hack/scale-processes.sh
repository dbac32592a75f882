#!/bin/bash
# Ferry in-process against Ferry as its own processes (issue 21 item 5, docs/scale.md).
# One after the other on this machine: `ferry scale -n N --floor` with everything in one
# process, then `ferry up --cluster-only` with `ferry controller` and `ferry gateway`
# started beside it and `ferry scale -n N --floor` run against them. Prints each run's
# summary and the CPU each process used during the second run, up to its floor (/proc).
#   make build && hack/scale-processes.sh          # N=500
#   N=100 hack/scale-processes.sh
# Separate processes have no admission webhooks (ferry up --cluster-only cannot reach
# one), so no create is held and scale to zero does not wait for bursts there.
set -u
B=$(realpath ${FERRY:-bin/ferry}); N=${N:-500}; D=$(mktemp -d)
summary() { grep -E '^(Ready:|Creation order|Creates held|  time to|  (created|ready|routed) |API writes|of which|Process|  CPU|Write floor)' "$1"; sed -n '/^Queue waits/,/^$/p' "$1"; }

echo "== in-process: ferry scale -n $N --floor"
$B scale -n $N --floor --report-dir $D/in-process > $D/in-process.out 2>&1
summary $D/in-process.out

echo "== separate processes: ferry up --cluster-only, ferry controller, ferry gateway"
$B up --cluster-only --data-dir $D/cluster > $D/up.log 2>&1 &
UP=$!
PIDS="$UP"
trap 'kill $PIDS 2>/dev/null; wait' EXIT
for i in $(seq 180); do [ -s $D/cluster/kubeconfig ] && grep -q "is up" $D/up.log && break; sleep 1; done
K=$D/cluster/kubeconfig
$B controller --kubeconfig $K --metrics-addr 127.0.0.1:19090 --health-addr 127.0.0.1:19082 \
  --stats-addr 127.0.0.1:19084 --log-format console > $D/controller.log 2>&1 &
CONTROLLER=$!
$B gateway --kubeconfig $K --addr 127.0.0.1:19180 --local-addr 127.0.0.1:19181 --simulated-pods \
  --metrics-addr 127.0.0.1:19091 --health-addr 127.0.0.1:19083 --autoscaler 127.0.0.1:19084 \
  --log-format console > $D/gateway.log 2>&1 &
GATEWAY=$!
PIDS="$UP $CONTROLLER $GATEWAY"
for i in $(seq 60); do curl -sf http://127.0.0.1:19082/readyz > /dev/null && curl -sf http://127.0.0.1:19083/readyz > /dev/null && break; sleep 1; done
sleep 5

# cpu PID: the seconds of CPU the process has used so far.
cpu() { awk -v hz=$(getconf CLK_TCK) '{print ($14 + $15) / hz}' /proc/$1/stat; }
declare -A before at_floor
for p in $UP $CONTROLLER $GATEWAY; do before[$p]=$(cpu $p); done
start=$(date +%s.%N)
touch $D/processes.out
$B scale -n $N --floor --kubeconfig $K --gateway http://127.0.0.1:19180 \
  --controller-metrics http://127.0.0.1:19090/metrics --report-dir $D/processes > $D/processes.out 2>&1 &
SCALE=$!
# The CPU of the run is read when the floor's writes begin, which it must not include.
while kill -0 $SCALE 2>/dev/null && ! grep -q '^floor:' $D/processes.out; do sleep 0.2; done
end=$(date +%s.%N)
for p in $UP $CONTROLLER $GATEWAY; do at_floor[$p]=$(cpu $p); done
wait $SCALE
summary $D/processes.out
echo "CPU by process until the floor began ($(printf %.1f $(echo "$end - $start" | bc)) s wall):"
for p in "$UP:cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok)" "$CONTROLLER:ferry controller" "$GATEWAY:ferry gateway"; do
  pid=${p%%:*}; used=$(echo "${at_floor[$pid]} - ${before[$pid]}" | bc)
  printf '  %-62s %6.1f s  %6.2f ms per Service\n' "${p#*:}" $used $(echo "$used * 1000 / $N" | bc -l)
done
echo "logs and reports: $D"
