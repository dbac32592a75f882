#!/bin/bash
# Does new work wait behind old? (issue 21, docs/scale.md) On an empty `ferry up`: one
# Service, PROBES times (a single one takes ~0.1 s, so one sample is mostly noise), and a
# burst of 100. Then 2000 Services are created and, while their Revisions scale to zero
# (their 60 s stable window ends for all within a couple of minutes), the same probes
# run again, the burst in the middle. It prints each time and the ratios of the medians
# and of the bursts, and exits 1 when one is over LIMIT (1.2).
#   make build && hack/starvation.sh
set -u
B=${FERRY:-bin/ferry}; D=$(mktemp -d); N=${N:-2000}; PROBES=${PROBES:-15}; LIMIT=${LIMIT:-1.2}
$B up --data-dir $D --gateway-addr 127.0.0.1:18090 --gateway-local-addr 127.0.0.1:18091 > $D/up.log 2>&1 &
UP=$!
trap 'kill $UP 2>/dev/null; wait' EXIT
for i in $(seq 180); do [ -s $D/kubeconfig ] && grep -q "is up" $D/up.log && break; sleep 1; done
sleep 5
K=$D/kubeconfig; G=http://127.0.0.1:18090
export KUBECONFIG=$K
# run N NAMESPACE [flags]: prints the seconds until all N Services were Ready and routed.
run() {
  $B scale -n $1 --kubeconfig $K --gateway $G --phases=false --namespace $2 --report-dir $D/r-$2 ${3:-} > $D/$2.out 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["totalRoutedSeconds"])' $D/r-$2/report.json
}
atzero() { kubectl get deploy -n idle -o jsonpath='{range .items[*]}{.spec.replicas}{"\n"}{end}' 2>/dev/null | grep -c '^0$'; }

empty=(); for i in $(seq $PROBES); do empty+=($(run 1 empty-1-$i)); done
burst_empty=$(run 100 empty-100)
echo "empty cluster: one Service ${empty[*]} s; burst of 100 $burst_empty s"

run $N idle "--timeout-per-service 30m" > /dev/null
echo "$N idle Services created; $(atzero) at zero"
during=(); burst_during=""
for i in $(seq $PROBES); do
  during+=($(run 1 during-1-$i))
  if [ $i -eq $(( PROBES / 2 )) ]; then burst_during=$(run 100 during-100); fi
  echo "probe $i: ${during[-1]} s, $(atzero) of $N at zero"
done
echo "while scaling to zero: one Service ${during[*]} s; burst of 100 $burst_during s"

python3 - "$LIMIT" "$burst_empty" "$burst_during" "${empty[*]}" "${during[*]}" <<'PY'
import statistics, sys
limit, be, bd = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
e = [float(x) for x in sys.argv[4].split()]; d = [float(x) for x in sys.argv[5].split()]
q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
me, md = statistics.median(e), statistics.median(d)
print(f"one Service: median {me:.3f} -> {md:.3f} s (x{md/me:.2f}), p90 {q(e,.9):.3f} -> {q(d,.9):.3f} s, max {max(e):.3f} -> {max(d):.3f} s")
print(f"burst of 100: {be:.2f} -> {bd:.2f} s (x{bd/be:.2f})")
sys.exit(0 if md / me <= limit and bd / be <= limit else 1)
PY
status=$?
echo "logs and reports: $D"
exit $status
