#!/bin/bash
# Ferry's data plane against Knative's, side by side in one run on this machine (issue
# 22, item 4; docs/gateway.md "Proxy numbers"). One backend (hack/benchbackend, HTTP/1.1
# and h2c on one port) behind each of:
#   direct     the backend itself
#   gateway    Ferry's gateway (TestBenchServe: accounting and load reports on, the
#              activator in the path, containerConcurrency 100, a 300 s timeout)
#   gateway-log  the same with config-observability's request log on (Knative's
#              default template), written to a file
#   gateway-trace0, gateway-trace1
#              the same with tracing on (tracing-protocol grpc to hack/benchotlp, a
#              real OTLP receiver on this machine) at tracing-sampling-rate 0, the
#              default, and 1: every request a trace of three spans, exported
#   nginx      nginx alone, 2 workers, upstream keepalive
#   knative    nginx standing in for Envoy (Kourier) in front of Knative's own
#              queue-proxy (knative.dev/serving cmd/queue, CONTAINER_CONCURRENCY 100,
#              REVISION_TIMEOUT_SECONDS 300, Knative's defaults otherwise), then
#              the backend: Knative's two hops
#   go-tcp     hack/benchgoproxy -mode tcp: bytes copied, no HTTP; what any Go proxy
#              could reach here (HTTP/1.1 rows only)
#   go-http    hack/benchgoproxy -mode http: net/http's server and ReverseProxy alone
# HTTP/1.1 is measured with wrk (p50 from its latency distribution); h2c and TLS
# (HTTP/2 by ALPN) with h2load, which prints no percentiles, so those rows give the
# mean. One client thread; c=1 and c=64 connections (h2load: one stream each); each
# target for DURATION, rounds interleaved across targets, the median of ROUNDS.
#
#   hack/bench-dataplane.sh                     # the table; about 7 minutes
#   DURATION=3 ROUNDS=1 hack/bench-dataplane.sh # a quick look
#   ONLY="direct gateway gateway-log nginx" hack/bench-dataplane.sh  # some rows (with
#                                               # the nginx and direct ones they are held against)
#   hack/bench-dataplane.sh --profile /tmp/gw.prof  # CPU profile of the gateway at c=64
#
# Needs root for apt-get on a machine without nginx, wrk or h2load. Ports 19080-19097
# on 127.0.0.1, and queue-proxy's fixed :8022 and :9090, must be free.
set -euo pipefail

DURATION=${DURATION:-5} # seconds per target and round
ROUNDS=${ROUNDS:-3}
ONLY=${ONLY:-} # target names to measure; all if empty
PROFILE=
if [ "${1:-}" = --profile ]; then
  PROFILE=${2:?--profile needs a file}
  case $PROFILE in /*) ;; *) PROFILE=$PWD/$PROFILE ;; esac # before the cd
fi
cd "$(dirname "$0")/.."

BACKEND=127.0.0.1:19091
GATEWAY=127.0.0.1:19092
GATEWAY_HTTPS=127.0.0.1:19093
GATEWAY_LOG=127.0.0.1:19083       # the gateway with request logs on
GATEWAY_LOG_HTTPS=127.0.0.1:19084
GATEWAY_TRACE0=127.0.0.1:19080    # the gateway, tracing at rate 0
GATEWAY_TRACE1=127.0.0.1:19081    # the gateway, tracing at rate 1
OTLP=127.0.0.1:19082              # benchotlp, the OTLP/gRPC receiver of both
QUEUE_PORT=19094
NGINX=127.0.0.1:19090             # nginx → backend
NGINX_KNATIVE=127.0.0.1:19095     # nginx → queue-proxy → backend
NGINX_TLS=127.0.0.1:19096         # nginx ssl → backend
NGINX_H2C=127.0.0.1:19097         # nginx h2c → h2c backend
NGINX_KNATIVE_H2C=127.0.0.1:19088 # nginx h2c → queue-proxy h2c → h2c backend
NGINX_KNATIVE_TLS=127.0.0.1:19089 # nginx ssl → queue-proxy → backend
GO_TCP=127.0.0.1:19086            # benchgoproxy -mode tcp → backend
GO_HTTP=127.0.0.1:19085           # benchgoproxy -mode http → backend
HOST=bench.example.com            # the gateway's HTTP/1.1 revision
H2C_HOST=h2c.example.com          # its h2c revision (same backend)

die() {
  echo "bench-dataplane: $*" >&2
  exit 1
}

# Tools, from Debian's packages when missing.
missing=()
command -v nginx > /dev/null || missing+=(nginx)
command -v wrk > /dev/null || missing+=(wrk)
command -v h2load > /dev/null || missing+=(nghttp2-client)
command -v openssl > /dev/null || missing+=(openssl)
command -v curl > /dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}" >&2
  apt-get install -y "${missing[@]}" > /dev/null || { apt-get update > /dev/null && apt-get install -y "${missing[@]}" > /dev/null; } ||
    die "cannot install ${missing[*]}"
fi
NGINX_BIN=$(command -v nginx)

for port in 19080 19081 19082 19083 19084 19085 19086 19088 19089 19090 19091 19092 19093 19094 19095 19096 19097 8022 9090; do
  if ss -Hltn "sport = :$port" | grep -q .; then die "port $port is taken"; fi
done

# Builds, into bin/ (ignored by git). queue-proxy comes from the separate module
# test/knative, so that Knative never enters the root module.
mkdir -p bin
echo "building" >&2
go build -o bin/benchbackend ./hack/benchbackend || die "build of hack/benchbackend failed"
go build -o bin/benchgoproxy ./hack/benchgoproxy || die "build of hack/benchgoproxy failed"
go build -o bin/benchotlp ./hack/benchotlp || die "build of hack/benchotlp failed"
go test -c -o bin/gateway.test ./internal/gateway || die "build of the gateway's test binary failed"
if [ -z "$PROFILE" ]; then
  (cd test/knative && go build -o ../../bin/queue-proxy knative.dev/serving/cmd/queue) || die "build of queue-proxy failed"
fi

WORK=$(mktemp -d)
PIDS=()
declare -A PID
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
  # queue-proxy drains for 30 s on SIGTERM; nothing here needs that.
  sleep 0.5
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME COMMAND...: runs it in the background, output to $WORK/NAME.log.
start() {
  local name=$1
  shift
  "$@" > "$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  PID[$name]=$!
}

# ready NAME URL [curl flags]: waits up to 15 s for a 200 from URL, or fails with the
# process's log.
ready() {
  local name=$1 url=$2 pid
  shift 2
  pid=${PID[$name]}
  for _ in $(seq 150); do
    if ! kill -0 "$pid" 2> /dev/null; then
      cat "$WORK/$name.log" >&2
      die "$name exited"
    fi
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$@" "$url")" = 200 ]; then return 0; fi
    sleep 0.1
  done
  cat "$WORK/$name.log" >&2
  die "$name did not answer 200 at $url within 15 s"
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$HOST" \
  -addext "subjectAltName=DNS:$HOST,DNS:$H2C_HOST" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2> /dev/null ||
  die "openssl could not make a certificate"

start backend bin/benchbackend -addr $BACKEND
ready backend "http://$BACKEND/"

gateway_flags=(-test.run '^TestBenchServe$' -test.timeout 0 -test.v)
if [ -n "$PROFILE" ]; then gateway_flags+=(-test.cpuprofile "$PROFILE"); fi
start gateway env FERRY_BENCH_SERVE=$GATEWAY FERRY_BENCH_HTTPS=$GATEWAY_HTTPS FERRY_BENCH_BACKEND=$BACKEND \
  FERRY_BENCH_CERT="$WORK/cert.pem" FERRY_BENCH_KEY="$WORK/key.pem" bin/gateway.test "${gateway_flags[@]}"
ready gateway "http://$GATEWAY/" -H "Host: $HOST"
start gateway-log env FERRY_BENCH_SERVE=$GATEWAY_LOG FERRY_BENCH_HTTPS=$GATEWAY_LOG_HTTPS FERRY_BENCH_BACKEND=$BACKEND \
  FERRY_BENCH_CERT="$WORK/cert.pem" FERRY_BENCH_KEY="$WORK/key.pem" \
  FERRY_BENCH_OBSERVABILITY='{"logging.enable-request-log": "true"}' FERRY_BENCH_REQUEST_LOG="$WORK/requests.log" \
  bin/gateway.test -test.run '^TestBenchServe$' -test.timeout 0 -test.v
ready gateway-log "http://$GATEWAY_LOG/" -H "Host: $HOST"
grep -q '"requestMethod": "GET"' "$WORK/requests.log" || die "the gateway with request logs on wrote no line"
start otlp bin/benchotlp -addr $OTLP
for rate in 0 1; do
  addr=GATEWAY_TRACE$rate
  start gateway-trace$rate env FERRY_BENCH_SERVE=${!addr} FERRY_BENCH_BACKEND=$BACKEND \
    FERRY_BENCH_OBSERVABILITY="{\"tracing-protocol\": \"grpc\", \"tracing-endpoint\": \"http://$OTLP\", \"tracing-sampling-rate\": \"$rate\"}" \
    bin/gateway.test -test.run '^TestBenchServe$' -test.timeout 0 -test.v
  ready gateway-trace$rate "http://${!addr}/" -H "Host: $HOST"
done

if [ -n "$PROFILE" ]; then
  # Only the gateway at c=64, so that the profile is of that.
  wrk -t1 -c64 -d"${DURATION}s" -H "Host: $HOST" "http://$GATEWAY/" > "$WORK/wrk.out" || die "wrk failed"
  grep Requests/sec "$WORK/wrk.out"
  kill "${PID[gateway]}"
  wait "${PID[gateway]}" || die "the gateway did not exit cleanly: $(cat "$WORK/gateway.log")"
  go tool pprof -top bin/gateway.test "$PROFILE" 2> /dev/null | head -40
  exit 0
fi

# Knative's queue-proxy, with what the revision's Deployment gives it under Knative's
# default config maps (pkg/reconciler/revision/resources/queue.go): request metrics to
# Prometheus, no request log, tracing "none" (unset, it would wrap every request in
# OpenCensus). It serves HTTP/1.1 and h2c, and speaks h2c to the backend for
# requests that came in over HTTP/2.
start queue env -i PATH="$PATH" SERVING_NAMESPACE=bench SERVING_SERVICE=bench SERVING_CONFIGURATION=bench \
  SERVING_REVISION=bench-00001 SERVING_POD=bench-00001-deployment-0 SERVING_POD_IP=127.0.0.1 \
  QUEUE_SERVING_PORT=$QUEUE_PORT QUEUE_SERVING_TLS_PORT=19087 USER_PORT=${BACKEND##*:} \
  REVISION_TIMEOUT_SECONDS=300 CONTAINER_CONCURRENCY=100 SERVING_LOGGING_CONFIG= SERVING_LOGGING_LEVEL=error \
  SERVING_ENABLE_REQUEST_LOG=false SERVING_ENABLE_PROBE_REQUEST_LOG=false \
  SERVING_REQUEST_METRICS_BACKEND=prometheus SERVING_REQUEST_METRICS_REPORTING_PERIOD_SECONDS=5 \
  TRACING_CONFIG_BACKEND=none TRACING_CONFIG_SAMPLE_RATE=0.1 \
  bin/queue-proxy
ready queue "http://127.0.0.1:$QUEUE_PORT/"

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
  ssl_certificate $WORK/cert.pem;
  ssl_certificate_key $WORK/key.pem;
  ssl_protocols TLSv1.3;
  # nginx closes a connection after 1000 requests by default, which wrk counts as an
  # error and Envoy does not do.
  keepalive_requests 100000000;
  http2_max_requests 100000000;
  upstream backend { server $BACKEND; keepalive 128; keepalive_requests 100000000; }
  upstream queue { server 127.0.0.1:$QUEUE_PORT; keepalive 128; keepalive_requests 100000000; }
  # Apart from the HTTP/1.1 ones: an upstream's idle connections are one pool, and an
  # h2c connection handed to proxy_pass answers it nothing it can read.
  upstream backend_h2c { server $BACKEND; keepalive 128; keepalive_requests 100000000; }
  upstream queue_h2c { server 127.0.0.1:$QUEUE_PORT; keepalive 128; keepalive_requests 100000000; }
  # The HTTP/1.1 hops, as Kourier's Envoy to an http1 revision.
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_buffering off;
  server { listen $NGINX; location / { proxy_pass http://backend; } }
  server { listen $NGINX_KNATIVE; location / { proxy_pass http://queue; } }
  server { listen $NGINX_TLS ssl http2; location / { proxy_pass http://backend; } }
  server { listen $NGINX_KNATIVE_TLS ssl http2; location / { proxy_pass http://queue; } }
  # h2c in and out, as to an h2c revision: grpc_pass is nginx's HTTP/2 upstream.
  server { listen $NGINX_H2C http2; location / { grpc_pass grpc://backend_h2c; } }
  server { listen $NGINX_KNATIVE_H2C http2; location / { grpc_pass grpc://queue_h2c; } }
}
EOF
start nginx "$NGINX_BIN" -p "$WORK/nginx" -c "$WORK/nginx.conf" -g 'daemon off;'
ready nginx "http://$NGINX/"
ready nginx "http://$NGINX_KNATIVE/"
ready nginx "http://$NGINX_H2C/" --http2-prior-knowledge
ready nginx "http://$NGINX_KNATIVE_H2C/" --http2-prior-knowledge
ready nginx "https://$HOST:${NGINX_TLS##*:}/" -k --resolve "$HOST:${NGINX_TLS##*:}:127.0.0.1"
start go-tcp bin/benchgoproxy -mode tcp -addr $GO_TCP -backend $BACKEND
ready go-tcp "http://$GO_TCP/"
start go-http bin/benchgoproxy -mode http -addr $GO_HTTP -backend $BACKEND
ready go-http "http://$GO_HTTP/"
ready gateway "https://$HOST:${GATEWAY_HTTPS##*:}/" -k --resolve "$HOST:${GATEWAY_HTTPS##*:}:127.0.0.1"
ready gateway "http://$GATEWAY/" --http2-prior-knowledge -H "Host: $H2C_HOST"

# Targets: name, client, URL, and for wrk the Host header / for h2load the address
# to connect to (so that the URL's host is the SNI and :authority).
TARGETS=(
  "direct|wrk|http://$BACKEND/|$HOST"
  "gateway|wrk|http://$GATEWAY/|$HOST"
  "gateway-log|wrk|http://$GATEWAY_LOG/|$HOST"
  "gateway-trace0|wrk|http://$GATEWAY_TRACE0/|$HOST"
  "gateway-trace1|wrk|http://$GATEWAY_TRACE1/|$HOST"
  "nginx|wrk|http://$NGINX/|$HOST"
  "knative|wrk|http://$NGINX_KNATIVE/|$HOST"
  "go-tcp|wrk|http://$GO_TCP/|$HOST"
  "go-http|wrk|http://$GO_HTTP/|$HOST"
  "direct-h2c|h2load|http://$H2C_HOST:${BACKEND##*:}/|$BACKEND"
  "gateway-h2c|h2load|http://$H2C_HOST:${GATEWAY##*:}/|$GATEWAY"
  "nginx-h2c|h2load|http://$H2C_HOST:${NGINX_H2C##*:}/|$NGINX_H2C"
  "knative-h2c|h2load|http://$H2C_HOST:${NGINX_KNATIVE_H2C##*:}/|$NGINX_KNATIVE_H2C"
  "gateway-tls|h2load|https://$HOST:${GATEWAY_HTTPS##*:}/|$GATEWAY_HTTPS"
  "nginx-tls|h2load|https://$HOST:${NGINX_TLS##*:}/|$NGINX_TLS"
  "knative-tls|h2load|https://$HOST:${NGINX_KNATIVE_TLS##*:}/|$NGINX_KNATIVE_TLS"
)

# micros VALUE: wrk's and h2load's "123.45us", "1.20ms" or "1.5s" in microseconds.
micros() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
    else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000000 }
    else { print "nan" } }'
}

# measure NAME CLIENT URL ARG CONNS: prints "req/s latency-µs", or fails with the
# client's output when a request failed.
measure() {
  local name=$1 client=$2 url=$3 arg=$4 conns=$5 out=$WORK/client.out
  if [ "$client" = wrk ]; then
    wrk -t1 -c"$conns" -d"${DURATION}s" --latency -H "Host: $arg" "$url" > "$out" 2>&1 || { cat "$out" >&2; die "wrk against $name failed"; }
    if grep -qE 'Non-2xx|Socket errors' "$out"; then
      cat "$out" "$WORK/nginx/error.log" >&2
      die "wrk saw errors from $name"
    fi
    echo "$(awk '$1 == "Requests/sec:" { print $2 }' "$out") $(micros "$(awk '$1 == "50%" { print $2 }' "$out")")"
  else
    h2load -t1 -c"$conns" -m1 -D "$DURATION" --connect-to="$arg" "$url" > "$out" 2>&1 || { cat "$out" >&2; die "h2load against $name failed"; }
    # A timed run may end with one stream cut, which h2load counts as failed (and
    # sometimes as a 3xx); more than that is an error.
    if ! awk '$1 == "requests:" && $10 > 1 { bad = 1 } $1 == "status" && $5 + $7 + $9 > 1 { bad = 1 } END { exit bad }' "$out"; then
      cat "$out" >&2
      die "h2load saw errors from $name"
    fi
    echo "$(awk '$1 == "finished" { print $4 }' "$out") $(micros "$(awk '$1 == "time" && $3 == "request:" { print $6 }' "$out")")"
  fi
}

# selected NAME: whether ONLY leaves the target in.
selected() {
  [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
RESULTS=$WORK/results
: > "$RESULTS"
for round in $(seq "$ROUNDS"); do
  for conns in 1 64; do
    for t in "${TARGETS[@]}"; do
      IFS='|' read -r name client url arg <<< "$t"
      selected "$name" || continue
      echo "round $round/$ROUNDS, c=$conns, $name" >&2
      result=$(measure "$name" "$client" "$url" "$arg" "$conns") || exit 1
      echo "$name $conns $result" >> "$RESULTS"
    done
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
kill "${PID[otlp]}"
wait "${PID[otlp]}" 2> /dev/null || true
SPANS=$(cat "$WORK/otlp.log")

# median NAME CONNS FIELD: of the rounds (field 3 req/s, 4 latency).
median() {
  awk -v n="$1" -v c="$2" -v f="$3" '$1 == n && $2 == c { print $f }' "$RESULTS" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The nginx each row is held against, and the direct one its latency is added to.
peer() {
  case $1 in
  *-h2c) echo "nginx-h2c direct-h2c" ;;
  *-tls) echo "nginx-tls -" ;;
  *) echo "nginx direct" ;;
  esac
}

echo
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $LOAD_BEFORE before, $LOAD_AFTER after;" \
  "median of $ROUNDS rounds of ${DURATION}s; one client thread"
echo "HTTP/1.1 rows: wrk, p50. -h2c and -tls rows: h2load (HTTP/2, one stream per connection), mean."
echo "gateway-trace rows: ${SPANS:-benchotlp printed nothing}"
printf '%-14s %11s %9s %11s %15s %9s %12s %14s\n' target "c=1 req/s" "c=1 lat" "c=64 req/s" "(rounds' range)" "c=64 lat" "c=64 / nginx" "c=1 added lat"
for t in "${TARGETS[@]}"; do
  IFS='|' read -r name _ <<< "$t"
  selected "$name" || continue
  read -r ref direct <<< "$(peer "$name")"
  r1=$(median "$name" 1 3) l1=$(median "$name" 1 4) r64=$(median "$name" 64 3) l64=$(median "$name" 64 4)
  ratio=$(awk -v a="$r64" -v b="$(median "$ref" 64 3)" 'BEGIN { printf "%.2fx", a / b }')
  added=-
  if [ "$direct" != - ] && [ "$name" != "$direct" ]; then
    added=$(awk -v a="$l1" -v b="$(median "$direct" 1 4)" 'BEGIN { printf "%+.0f us", a - b }')
  fi
  range=$(awk -v n="$name" '$1 == n && $2 == 64 { v = $3 + 0; if (!lo || v < lo) lo = v; if (v > hi) hi = v }
    END { printf "%.0f-%.0f", lo, hi }' "$RESULTS")
  printf '%-14s %11.0f %6.0f us %11.0f %15s %6.0f us %12s %14s\n' "$name" "$r1" "$l1" "$r64" "$range" "$l64" "$ratio" "$added"
done
