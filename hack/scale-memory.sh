#!/bin/bash
# N Services through ferry controller + ferry gateway as processes against ferry up --cluster-only:
# the controller's RSS and Go heap before and after (docs/scale.md). C: the controller
# binary (e.g. one built -tags nolocalcluster, as in the image).
set -u -o pipefail
N=${1:-1000}; B=${FERRY:-bin/ferry}; C=${C:-$B}; D=$(mktemp -d); R=$D/report
$B up --cluster-only --data-dir $D --gateway-addr 127.0.0.1:18080 --gateway-local-addr 127.0.0.1:18081 > $D/up.log 2>&1 &
UP=$!
for i in $(seq 120); do [ -s $D/kubeconfig ] && grep -q "is up" $D/up.log && break; sleep 1; done
K=$D/kubeconfig
$C controller --kubeconfig $K --metrics-addr 127.0.0.1:18085 --pprof-addr 127.0.0.1:18086 --health-addr 127.0.0.1:18082 --stats-addr 127.0.0.1:18084 > $D/ctl.log 2>&1 &
CTL=$!
$C gateway --kubeconfig $K --addr 127.0.0.1:18080 --local-addr 127.0.0.1:18081 --simulated-pods --metrics-addr 0 --health-addr 127.0.0.1:18083 --autoscaler 127.0.0.1:18084 > $D/gw.log 2>&1 &
GW=$!
sleep 8
rss() { awk '/VmRSS/{printf "%.0f MiB", $2/1024}' /proc/$1/status; }
hwm() { awk '/VmHWM/{printf "%.0f MiB", $2/1024}' /proc/$1/status; }
heap() { curl -s 127.0.0.1:18085/metrics | awk '/^go_memstats_heap_inuse_bytes/{printf "%.1f MiB", $2/1048576}'; }
# heap in use counts garbage not yet collected; a heap profile asked for with ?gc=1
# follows a forced collection, so its in-use total is what is live now.
live() { go tool pprof -sample_index=inuse_space -top -nodecount=1 $C $1 2>/dev/null | sed -n 's/.* of \(.*\) total/\1/p'; }
curl -s "127.0.0.1:18086/debug/pprof/heap?gc=1" > $D/heap0.prof
echo "before: controller RSS $(rss $CTL), heap in use $(heap)"
$B scale -n $N --kubeconfig $K --phases=false --gateway http://127.0.0.1:18080 --report-dir $R --namespace mem ${SCALE_ARGS:-} 2>&1 | grep -v "^\s*$" | tail -3
echo "after the burst: controller RSS $(rss $CTL) (peak $(hwm $CTL)), heap in use $(heap); gateway RSS $(rss $GW)"
curl -s "127.0.0.1:18086/debug/pprof/heap?gc=1" > $D/heap.prof
echo "live heap: before $(live $D/heap0.prof), after $(live $D/heap.prof)"
sleep 20
echo "20 s later: controller RSS $(rss $CTL), heap in use $(heap)"
# 100 s after the burst its Revisions are at zero: what stays is what idle Services cost.
sleep 80
curl -s "127.0.0.1:18086/debug/pprof/heap?gc=1" > $D/heap-idle.prof
echo "100 s later: controller RSS $(rss $CTL), live heap $(live $D/heap-idle.prof), pods left $(kubectl --kubeconfig $K get pods -A --no-headers 2>/dev/null | wc -l)"
sed -n 2,4p $R/summary.txt
kill $GW $CTL; sleep 2; kill $UP; wait
echo "logs and reports: $D"
