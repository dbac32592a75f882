#!/bin/bash
# Two builds of the gateway side by side, with nginx as the yardstick, in one run: each
# round loads gateway A, gateway B and nginx in turn with wrk (one thread, C
# connections, D seconds) and reads each process's CPU time from /proc, so that a
# change's effect shows as CPU per request as well as requests per second
# (docs/gateway.md, "One context per request"). A and B are test binaries of
# ./internal/gateway (go test -c), each serving TestBenchServe as bench-dataplane.sh's
# gateway row does; the backend is hack/benchbackend, nginx has that script's
# configuration.
#
#   git stash; go test -c -o /tmp/before.test ./internal/gateway; git stash pop
#   go test -c -o /tmp/after.test ./internal/gateway
#   hack/bench-gateway-ab.sh /tmp/before.test /tmp/after.test     # 6 rounds of 5 s, c=64
#   C=1 R=3 hack/bench-gateway-ab.sh /tmp/before.test /tmp/after.test
#
# Prints a line per target and round, then the medians and the paired ratios. Ports
# 19190-19196 on 127.0.0.1 must be free.
set -euo pipefail

A=${1:?usage: bench-gateway-ab.sh A.test B.test}
B=${2:?usage: bench-gateway-ab.sh A.test B.test}
D=${D:-5} R=${R:-6} C=${C:-64}
A=$(realpath "$A") B=$(realpath "$B")
cd "$(dirname "$0")/.."

BACKEND=127.0.0.1:19191
NGINX=127.0.0.1:19190
GW_A=127.0.0.1:19192 GW_A_HTTPS=127.0.0.1:19193
GW_B=127.0.0.1:19194 GW_B_HTTPS=127.0.0.1:19195
HOST=bench.example.com

for tool in nginx wrk openssl curl; do
  command -v $tool > /dev/null || { echo "bench-gateway-ab: needs $tool (hack/bench-dataplane.sh installs it)" >&2; exit 1; }
done
mkdir -p bin
go build -o bin/benchbackend ./hack/benchbackend

WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2> /dev/null || true; wait 2> /dev/null || true; rm -rf "$WORK"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$HOST" \
  -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2> /dev/null
bin/benchbackend -addr $BACKEND > "$WORK/backend.log" 2>&1 &
PIDS+=($!) BACKEND_PID=$!
gateway() { # binary addr https-addr
  FERRY_BENCH_SERVE=$2 FERRY_BENCH_HTTPS=$3 FERRY_BENCH_BACKEND=$BACKEND FERRY_BENCH_CERT="$WORK/cert.pem" \
    FERRY_BENCH_KEY="$WORK/key.pem" "$1" -test.run '^TestBenchServe$' -test.timeout 0 > "$WORK/gateway-$2.log" 2>&1 &
  PIDS+=($!)
}
gateway "$A" $GW_A $GW_A_HTTPS
A_PID=$!
gateway "$B" $GW_B $GW_B_HTTPS
B_PID=$!
mkdir -p "$WORK/nginx"
cat > "$WORK/nginx.conf" << EOF
worker_processes 2;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log error;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  keepalive_requests 100000000;
  upstream backend { server $BACKEND; keepalive 128; keepalive_requests 100000000; }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_buffering off;
  server { listen $NGINX; location / { proxy_pass http://backend; } }
}
EOF
nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" -g 'daemon off;' > "$WORK/nginx.log" 2>&1 &
PIDS+=($!) NGINX_PID=$!
for addr in $BACKEND $GW_A $GW_B $NGINX; do
  for _ in $(seq 100); do
    curl -sf -o /dev/null -H "Host: $HOST" "http://$addr/" && continue 2
    sleep 0.2
  done
  echo "bench-gateway-ab: nothing answers on $addr" >&2
  cat "$WORK"/*.log >&2
  exit 1
done

# cpu PID: user + system ticks of the process and its children (nginx's workers).
cpu() {
  local total=0 p fields
  for p in $1 $(pgrep -P "$1" || true); do
    read -r -a fields < "/proc/$p/stat"
    total=$((total + fields[13] + fields[14]))
  done
  echo $total
}
tick=$(getconf CLK_TCK)
measure() { # name addr pid
  local c0 b0 c1 b1 out rps p50
  c0=$(cpu "$3") b0=$(cpu $BACKEND_PID)
  out=$(wrk -t1 -c"$C" -d"${D}s" --latency -H "Host: $HOST" "http://$2/")
  c1=$(cpu "$3") b1=$(cpu $BACKEND_PID)
  rps=$(awk '/Requests\/sec/ {print $2}' <<< "$out")
  p50=$(awk '$1 == "50%" {print $2}' <<< "$out")
  awk -v n="$1" -v r="$rps" -v p="$p50" -v c=$((c1 - c0)) -v b=$((b1 - b0)) -v d="$D" -v t="$tick" \
    'BEGIN { printf "%-6s %8.0f req/s  p50 %9s  proxy %6.1f us/req  backend %6.1f us/req\n", n, r, p, c * 1e6 / t / (r * d), b * 1e6 / t / (r * d) }'
}
for _ in $(seq "$R"); do
  measure A $GW_A $A_PID
  measure B $GW_B $B_PID
  measure nginx $NGINX $NGINX_PID
done | tee "$WORK/rounds"
echo "medians of $R rounds of ${D}s at c=$C:"
awk '
  { rps[$1] = rps[$1] " " $2; cpu[$1] = cpu[$1] " " $7; if ($1 == "A") a[++na] = $2; if ($1 == "B") b[++nb] = $2; if ($1 == "nginx") g[++ng] = $2 }
  function median(list,   v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (k in rps) printf "%-6s %8.0f req/s  proxy %6.1f us/req\n", k, median(rps[k]), median(cpu[k])
    ratios = ""; an = ""; bn = ""
    for (i = 1; i <= na; i++) { ratios = ratios sprintf(" %.2f", b[i] / a[i]); an = an sprintf(" %.2f", a[i] / g[i]); bn = bn sprintf(" %.2f", b[i] / g[i]) }
    print "B/A by round:" ratios
    print "A/nginx by round:" an
    print "B/nginx by round:" bn
  }' "$WORK/rounds"
