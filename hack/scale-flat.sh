#!/bin/bash
# One Service (five times: a single one takes ~0.1 s, so one sample is mostly noise) and
# a burst of 100 on an empty cluster, then again with 2000 idle Services present (ferry
# up, in-process): is Ferry flat in what is deployed? (docs/scale.md)
set -u
B=${FERRY:-bin/ferry}; D=$(mktemp -d)
$B up --data-dir $D --gateway-addr 127.0.0.1:18090 --gateway-local-addr 127.0.0.1:18091 > $D/up.log 2>&1 &
UP=$!
for i in $(seq 180); do [ -s $D/kubeconfig ] && grep -q "is up" $D/up.log && break; sleep 1; done
sleep 5
K=$D/kubeconfig; G=http://127.0.0.1:18090
run() { $B scale -n $1 --kubeconfig $K --gateway $G --phases=false --namespace $2 --report-dir $D/r-$2 ${3:-} > $D/$2.out 2>&1; echo "$2: $(sed -n 3p $D/r-$2/summary.txt)"; }
for i in 1 2 3 4 5; do run 1 empty-1-$i; done; run 100 empty-100
run 2000 idle "--timeout-per-service 30m"
export KUBECONFIG=$K
for i in $(seq 150); do
  n=$(kubectl get deploy -n idle -o jsonpath='{range .items[*]}{.spec.replicas}{"\n"}{end}' 2>/dev/null | grep -c '^0$')
  [ "$n" -ge 2000 ] && break; sleep 4
done
echo "idle: $n of 2000 at zero after $((i*4)) s more"
cpu() { awk '{print $14+$15}' /proc/$UP/stat; }
for j in $(seq 30); do
  c0=$(cpu); sleep 10; c1=$(cpu)
  echo "quiet check $j: $(echo "scale=3; ($c1-$c0)/100/10" | bc) cores"
  [ $(( c1 - c0 )) -lt 200 ] && break
done
for i in 1 2 3 4 5; do run 1 full-1-$i; done; run 100 full-100
kill $UP; wait
echo "logs and reports: $D"
