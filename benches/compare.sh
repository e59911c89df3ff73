#!/usr/bin/env bash
# Peer comparison: h2load-rs against h2load, wrk, oha and curl, measured in the same run.
#
#   benches/compare.sh [ROUNDS]      (default 3 rounds; writes benches/RESULTS.md)
#   benches/compare.sh pacing [ROUNDS]   (only the --rate pacing rows; replaces that section of
#                                         RESULTS.md; BASELINE=/path/to/h2load-rs adds the same
#                                         rows measured with another build, e.g. main's)
#   BASELINE=/path/to/h2load-rs benches/compare.sh ab [ROUNDS]
#                                        (the four request rows of `io`, h2load-rs against another
#                                         build of itself alone, interleaved: the check that a change
#                                         kept CPU per request and RSS; replaces that section)
#   benches/compare.sh h3 [ROUNDS]       (only the HTTP/3 section: h3 and h2 against Caddy and the
#                                         built-in TLS target, 1 GiB downloads, who sets the pace;
#                                         replaces that section of RESULTS.md)
#   benches/compare.sh tls [ROUNDS]      (only the TLS-handshake section: new TLS connections per
#                                         second, one request each, full and resumed, h1 and h2,
#                                         against nghttpx; replaces that section of RESULTS.md)
#   benches/compare.sh io [ROUNDS]       (only the four request rows that carry the --io uring
#                                         variants, h2c and HTTP/1.1 against nghttpd and nginx;
#                                         prints them, RESULTS.md is left as it is)
#   benches/compare.sh downloads [ROUNDS] (only the single-connection rows: the 1 GiB downloads
#                                         over h2c and HTTP/1.1 against nghttpd and nginx, and h2
#                                         -c 10 -m 10 /ping on the built-in TLS target; prints
#                                         them, RESULTS.md is left as it is)
#   benches/compare.sh profile           (only the client profile: perf record -g of h2load-rs on
#                                         h1 -c 100 against nginx under --io epoll and --io uring,
#                                         and of wrk, CPU split by kind; replaces that section)
#   benches/compare.sh memory            (only the memory section: peak RSS by -n, RSS per waiting
#                                         connection under --io epoll and --io uring, a 10 MB body;
#                                         one run each; replaces that section of RESULTS.md)
#   benches/compare.sh grpc [ROUNDS]     (only the gRPC section: unary calls and bidirectional
#                                         streams over h2c against the grpc-go server of
#                                         tests/grpc-target, h2load-rs against ghz; replaces that
#                                         section of RESULTS.md)
#
# Installs what it needs (Debian packages, oha with cargo; oha with HTTP/3 is built once into
# ~/.cache/h2load-rs/oha-h3, about 10 minutes; ghz with go install into ~/.cache/h2load-rs/ghz-v0.121.0),
# starts nginx (1 worker), nghttpd (1 thread), Caddy (GOMAXPROCS follows the pinning: 1), the
# built-in target (1 thread, plain and TLS) and the grpc-go target (GOMAXPROCS=1) pinned to CPU 0,
# pins every client to CPU 1, runs each row's tools interleaved (A B C A B C ...) and reports
# medians. Ratios are arranged so that >= 1.0 means h2load-rs is at
# least as good: throughput ours/peer, CPU per request peer/ours, peak RSS peer/ours.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
only=""
case "${1:-}" in
  pacing | h3 | tls | io | downloads | profile | memory | ab | grpc)
    only=$1
    shift
    ;;
esac
rounds=${1:-3}
work="$root/target/compare"
results="$root/benches/RESULTS.md"
server_cpu=0
client_cpu=1
# COMPARE_PORT=P moves the servers to P, P+100, ..., P+501, P+600 (tests/testbed.sh uses the first
# three defaults too); COMPARE_PORT_STEP=S to P, P+S, ..., P+5S+1, P+6S (S=10 keeps them within
# P..P+99).
h1_port=${COMPARE_PORT:-19180}
port_step=${COMPARE_PORT_STEP:-100}
h2c_port=$((h1_port + port_step))
target_port=$((h1_port + 2 * port_step))
caddy_port=$((h1_port + 3 * port_step))
tls_target_port=$((h1_port + 4 * port_step))
# Kept across runs: building oha with its http3 feature takes about 10 minutes.
oha_h3_root="$HOME/.cache/h2load-rs/oha-h3"
# Length of each HTTP/3-section request run: a duration, not a count, because oha's HTTP/3 run
# ends with a ~30 s wait for its connections to close, which its -z window leaves out.
h3_seconds=${H3_SECONDS:-10}
# The HTTP/3 section of RESULTS.md lies between these (invisible in rendered Markdown).
h3_begin="<!-- HTTP/3 section: benches/compare.sh h3 replaces it -->"
h3_end="<!-- end of the HTTP/3 section -->"
# The TLS-handshake section: nghttpx (TLS frontend) and its nginx backend, on ports of their own
# (after the others: a fixed port here once collided with the h2c port of COMPARE_PORT=18600).
tls_port=${TLS_PORT:-$((h1_port + 5 * port_step))}
tls_backend_port=$((tls_port + 1))
# Connections (one request each) per run of the TLS-handshake section, and h2load-rs's -c there.
tls_connections=${TLS_CONNECTIONS:-4000}
tls_clients=${TLS_CLIENTS:-20}
tls_begin="<!-- TLS-handshake section: benches/compare.sh tls replaces it -->"
tls_end="<!-- end of the TLS-handshake section -->"
# The gRPC section: the grpc-go server of tests/grpc-target (h2c) on a port of its own, after the
# TLS ones (19780 by default: none of tests/testbed.sh's, whose gRPC servers hold 19085-19087,
# 19445 and 19447); ghz where this script installs it; calls per run (both tools).
grpc_port=${GRPC_PORT:-$((h1_port + 6 * port_step))}
ghz="${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs/ghz-v0.121.0/bin/ghz"
grpc_calls=${GRPC_CALLS:-200000}
# The bidirectional-stream row: streams per run (both tools) and messages on each stream.
grpc_streams=${GRPC_STREAMS:-50000}
grpc_stream_messages=${GRPC_STREAM_MESSAGES:-10}
grpc_begin="<!-- gRPC section: benches/compare.sh grpc replaces it -->"
grpc_end="<!-- end of the gRPC section -->"
profile_begin="<!-- profile section: benches/compare.sh profile replaces it -->"
profile_end="<!-- end of the profile section -->"
ab_begin="<!-- build-against-build section: benches/compare.sh ab replaces it -->"
ab_end="<!-- end of the build-against-build section -->"
# Requests of each profiled run, and perf's sampling period: one sample per 100 µs of CPU time
# (cpu-clock, in ns: hardware counters are often missing in VMs), so samples x 100 = µs.
profile_requests=${PROFILE_REQUESTS:-300000}
profile_period_ns=100000

install() {
  local need=()
  command -v h2load >/dev/null || need+=(nghttp2-client)
  command -v nghttpd >/dev/null || need+=(nghttp2-server)
  command -v nghttpx >/dev/null || need+=(nghttp2-proxy)
  command -v nginx >/dev/null || need+=(nginx-light)
  command -v wrk >/dev/null || need+=(wrk)
  command -v ab >/dev/null || need+=(apache2-utils)
  command -v curl >/dev/null || need+=(curl)
  command -v caddy >/dev/null || need+=(caddy)
  [ -x /usr/bin/time ] || need+=(time)
  if [ -z "$only" ] || [ "$only" = profile ]; then
    command -v perf >/dev/null || need+=(linux-perf)
  fi
  if [ ${#need[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  command -v oha >/dev/null || [ -x "$HOME/.cargo/bin/oha" ] || cargo install --locked oha >/dev/null
  oha=$(command -v oha || echo "$HOME/.cargo/bin/oha")
  oha_h3="$oha_h3_root/bin/oha"
  if { [ -z "$only" ] || [ "$only" = h3 ]; } && [ ! -x "$oha_h3" ]; then
    echo "building oha with HTTP/3 into $oha_h3_root (about 10 minutes, once)" >&2
    cargo install --locked --features http3 --root "$oha_h3_root" oha >/dev/null
  fi
  if [ -z "$only" ] || [ "$only" = grpc ]; then
    command -v go >/dev/null || { echo "compare.sh: the gRPC section needs Go (for ghz and tests/grpc-target)" >&2; exit 1; }
    if [ ! -x "$ghz" ]; then
      echo "installing ghz v0.121.0 into $(dirname "$ghz")" >&2
      GOBIN=$(dirname "$ghz") go install github.com/bojand/ghz/cmd/ghz@v0.121.0
    fi
  fi
  (cd "$root" && cargo build --release --locked -q)
  ours="$root/target/release/h2load-rs"
}

start_servers() {
  if [ "$only" = grpc ]; then
    start_grpc_server
    return
  fi
  mkdir -p "$work/www" "$work/temp"
  printf pong >"$work/www/ping"
  [ -f "$work/www/1g" ] || truncate -s 1G "$work/www/1g"
  # Into the page cache first: otherwise the first download of a round (always h2load-rs's) pays
  # for filling it (10x the server's CPU, seen as 0.11 of h2load's throughput in a 1-round run).
  cat "$work/www/1g" >/dev/null
  if [ "$only" = tls ]; then
    start_tls_servers
    return
  fi
  if [ "$only" != h3 ]; then
    start_tcp_servers
  fi
  # downloads: its h2 row runs on the built-in TLS target.
  if [ -z "$only" ] || [ "$only" = h3 ] || [ "$only" = downloads ]; then
    start_h3_servers
  fi
  [ -n "$only" ] || start_tls_servers
  [ -n "$only" ] || start_grpc_server
}

# The grpc-go server of the test bed (tests/grpc-target: h2loadrs.probe.Probe), built from the
# checkout, h2c only, on the servers' core with GOMAXPROCS=1 as Caddy (Go would follow the pinning
# anyway; said explicitly here).
start_grpc_server() {
  (cd "$root/tests/grpc-target" && go build -o "$work/grpc-target" .)
  GOMAXPROCS=1 taskset -c $server_cpu "$work/grpc-target" -h2c "127.0.0.1:$grpc_port" >"$work/grpc-target.log" 2>&1 &
  pids+=($!)
  grpc_pid=$!
  wait_for_tcp $grpc_port
}

# nghttpx, one worker, TLS frontend (h2 and http/1.1 by ALPN; session tickets and early data on by
# default), pinned to the servers' core with its backend: nginx (1 worker) answering /ping from
# its config. nghttpx keeps its backend connections open, so the backend adds a few µs of
# cleartext HTTP/1.1 per request against the hundreds a TLS handshake costs, it is the same for
# every client, and all the server side spends is on one core (the server CPU columns).
start_tls_servers() {
  cat >"$work/nginx-tls-backend.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx-tls-backend.pid;
error_log $work/nginx-tls-backend-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $work/temp;
  server {
    listen 127.0.0.1:$tls_backend_port backlog=65535;
    location = /ping { return 200 "pong"; }
  }
}
CONF
  taskset -c $server_cpu nginx -c "$work/nginx-tls-backend.conf" &
  pids+=($!)
  local backend_master=$!
  taskset -c $server_cpu nghttpx --conf=/dev/null --workers=1 --frontend="127.0.0.1,$tls_port" \
    --backend="127.0.0.1,$tls_backend_port" --backlog=65535 --no-ocsp \
    --errorlog-file="$work/nghttpx-error.log" "$root/certs/server.key" "$root/certs/server.crt" &
  pids+=($!)
  nghttpx_pid=$!
  wait_for_tcp $tls_backend_port $tls_port
  # nghttpx forks its worker: count the master, the worker and the backend's processes.
  sleep 0.5
  tls_server_pids="$nghttpx_pid $(pgrep -P "$nghttpx_pid" | tr '\n' ' ') $backend_master $(pgrep -P "$backend_master" | tr '\n' ' ')"
}

wait_for_tcp() {
  local port
  for port in "$@"; do
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done
  done
}

start_tcp_servers() {
  cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $work/temp;
  root $work/www;
  sendfile on;
  server {
    listen 127.0.0.1:$h1_port backlog=65535;
    location = /ping { return 200 "pong"; }
  }
}
CONF
  taskset -c $server_cpu nginx -c "$work/nginx.conf" &
  pids+=($!)
  local nginx_master=$!
  taskset -c $server_cpu nghttpd --no-tls -a 127.0.0.1 -d "$work/www" $h2c_port >/dev/null 2>&1 &
  pids+=($!)
  nghttpd_pid=$!
  taskset -c $server_cpu "$ours" serve --port $target_port --threads 1 >/dev/null &
  pids+=($!)
  target_pid=$!
  wait_for_tcp $h1_port $h2c_port $target_port
  nginx_pids="$nginx_master $(pgrep -P "$nginx_master" | tr '\n' ' ')"
}

# Caddy (h1, h2 and h3 on one port: TCP and its UDP side) and the built-in target over TLS (h2,
# and h3 on its UDP side), both on CPU 0, with the test bed's certificate (clients use --cacert).
start_h3_servers() {
  mkdir -p "$work/caddy"
  # auto_https off: no HTTP->HTTPS redirect listener on port 80 (the test bed's Caddy holds it).
  # Both names, as in the test bed: a request for a site Caddy does not know gets an empty 200.
  cat >"$work/Caddyfile" <<CONF
{
  admin off
  auto_https off
  storage file_system $work/caddy
  servers {
    protocols h1 h2 h3
  }
}
https://localhost:$caddy_port, https://127.0.0.1:$caddy_port {
  bind 127.0.0.1
  tls $root/certs/server.crt $root/certs/server.key
  root * $work/www
  file_server
}
CONF
  XDG_CONFIG_HOME="$work/caddy" XDG_DATA_HOME="$work/caddy" \
    taskset -c $server_cpu caddy run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy.log" 2>&1 &
  pids+=($!)
  caddy_pid=$!
  taskset -c $server_cpu "$ours" serve --tls --tls-cert "$root/certs/server.crt" --tls-key "$root/certs/server.key" \
    --port $tls_target_port --threads 1 >/dev/null &
  pids+=($!)
  tls_target_pid=$!
  wait_for_tcp $caddy_port $tls_target_port
}

stop_servers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

# Seconds in an h2load-style duration ("850.76ms", "1.25s", "185us").
seconds() {
  awk -v d="$1" 'BEGIN {
    if (d ~ /ms$/) { sub(/ms$/, "", d); print d / 1000 }
    else if (d ~ /us$/) { sub(/us$/, "", d); print d / 1000000 }
    else { sub(/s$/, "", d); print d } }'
}

# CPU time (clock ticks) used so far by the server processes of the current row ($server_pids).
server_ticks() {
  local total=0 pid
  for pid in $server_pids; do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
  done
  echo $total
}

# Busy and total clock ticks so far of the servers' core, then the clients' core, all processes:
# when the server's own share stays under 90 % but a core is full, the machine's other work (or
# the client) took the rest.
core_ticks() {
  awk -v s="cpu$server_cpu" -v c="cpu$client_cpu" '$1 == s || $1 == c {
      line[$1] = ($2 + $3 + $4 + $7 + $8 + $9) " " ($2 + $3 + $4 + $5 + $6 + $7 + $8 + $9) }
    END { print line[s], line[c] }' /proc/stat
}

# Seconds in one of oha's summary lines ("  Slowest:	6.2206 ms"; units ns us ms sec min hr,
# and "10 sec" / "10 min" for its ten-fold scales).
oha_seconds() {
  awk -v label="$1:" '$1 == label {
    v = $2; u = $3; k = 1
    if (u ~ /^[0-9]+$/) { k = u; u = $4 }
    print v * k * ((u == "ns") ? 1e-9 : (u == "us") ? 1e-6 : (u == "ms") ? 1e-3 : (u == "min") ? 60 : (u == "hr") ? 3600 : 1)
    exit }' "$2"
}

# Runs one measurement: TOOL KIND CMD...; KIND is "requests", "bytes:N", "grpc" (calls: only
# those that ended with grpc-status OK count as done) or "grpc-stream:M" (streaming calls of M
# messages each, counted in messages: h2load-rs's received messages, ghz's OK streams x M, as ghz
# counts no messages). The client's CPU is
# wait4's rusage (/usr/bin/time), which includes io_uring's kernel threads (io-wq workers
# iou-wrk-*, the SQPOLL thread iou-sqp-*): they are threads of the client and their times join
# its totals when they exit (checked on Linux 6.18 against /proc/PID/task/*/stat).
# Prints "rate cpu_us_per_request rss_kb server_cpu_percent server_us_per_request
# server_core_busy_percent client_core_busy_percent" (rate in requests/s, or bytes/s for
# downloads; the last two: all processes on the servers' and the clients' core).
measure() {
  local tool=$1 kind=$2
  shift 2
  local out="$work/out" timing="$work/time"
  local ticks_before started ticks_after ended core_before core_after
  ticks_before=$(server_ticks)
  core_before=$(core_ticks)
  started=$(date +%s.%N)
  # A failed run is reported and counts as 0, visible in the table, instead of ending the whole run.
  /usr/bin/time -f "%U %S %M" -o "$timing" taskset -c $client_cpu "$@" >"$out" 2>&1 ||
    echo "$tool failed (exit status $?): $*" >&2
  ended=$(date +%s.%N)
  ticks_after=$(server_ticks)
  core_after=$(core_ticks)
  local user sys rss
  # The last line: time puts "Command exited with non-zero status N" before it on a failure.
  read -r user sys rss < <(tail -n 1 "$timing")
  # done_requests: the successful ones (a download that failed moved no bytes); window: seconds
  # the load ran, when the tool's wall time holds more than that.
  local rate done_requests window=""
  case "$tool" in
    h2load-rs* | h2load | baseline*)
      local elapsed
      elapsed=$(seconds "$(sed -n 's/^finished in \([^,]*\),.*/\1/p' "$out")")
      done_requests=$(sed -n 's/^requests: .* \([0-9]*\) succeeded,.*/\1/p' "$out")
      # gRPC: the calls answered OK ("grpc status: 99990 OK, 10 UNAVAILABLE (/pkg.Svc/Method)").
      [ "$kind" != grpc ] || done_requests=$(sed -n 's/^grpc status: \([0-9]*\) OK[,( ].*/\1/p' "$out")
      # gRPC streams: the messages received ("grpc messages: sent S messages (...), received R messages (...)").
      [[ $kind != grpc-stream:* ]] || done_requests=$(sed -n 's/^grpc messages: .*, received \([0-9]*\) messages.*/\1/p' "$out")
      # A client that lingers after its run (e.g. waiting for connections to close) costs the
      # user that time although "finished in" leaves it out: say so under the row.
      awk -v t="$tool" -v e="$elapsed" -v a="$started" -v b="$ended" 'BEGIN {
        if (b - a - e > 1) printf "> %s exited %.1f s after its measured %.2f s: a wait at exit.\n", t, b - a - e, e }' >>"$work/notes"
      if [[ $kind == bytes:* ]]; then
        rate=$(awk -v b="${kind#bytes:}" -v n="$done_requests" -v t="$elapsed" 'BEGIN { print (n > 0) ? b / t : 0 }')
      else
        rate=$(awk -v n="$done_requests" -v t="$elapsed" 'BEGIN { print n / t }')
      fi
      ;;
    wrk)
      rate=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
      done_requests=$(awk '/requests in/ { print $1 }' "$out")
      ;;
    oha)
      # The status line only: a latency histogram bucket may also read "[200]".
      done_requests=$(awk '/^ *\[200\] [0-9]+ responses/ { print $2 }' "$out")
      # oha's HTTP/3 connections wait for the server's idle timeout (30 s for Caddy) before it
      # exits (h3's graceful shutdown: GOAWAY, then until the server closes), and its Total and
      # printed rate count that wait. So a download is timed by its one request, and a -z run's
      # rate and server CPU % are over the -z duration.
      if [[ $kind == bytes:* ]]; then
        window=$(oha_seconds Slowest "$out")
        rate=$(awk -v b="${kind#bytes:}" -v n="$done_requests" -v t="$window" 'BEGIN { print (n > 0) ? b / t : 0 }')
      else
        rate=$(awk '/Requests\/sec:/ { print $2 }' "$out")
        local arg previous=""
        for arg in "$@"; do
          [ "$previous" = -z ] && window=$(seconds "$arg")
          previous=$arg
        done
        [ -n "$window" ] && rate=$(awk -v n="$done_requests" -v t="$window" 'BEGIN { print n / t }')
      fi
      ;;
    curl)
      rate=$(cat "$out")
      done_requests=1
      ;;
    ghz)
      # Its summary: "[OK]   N responses" in the status code distribution, and "Total:" (from its
      # connections being up to the last answer, "13.78 s" or "850.12 ms"); the rate is the OK calls
      # over Total, as h2load-rs's are its OK calls over "finished in".
      done_requests=$(awk '$1 == "[OK]" { print $2; exit }' "$out")
      # Streams of M messages: ghz counts streams only, so OK streams x M (grpc_stream_check shows,
      # with ghz's debug log, that a stream carries M messages each way).
      [[ $kind != grpc-stream:* ]] || done_requests=$((${done_requests:-0} * ${kind#grpc-stream:}))
      rate=$(awk -v n="${done_requests:-0}" '$1 == "Total:" {
        t = $2 * (($3 == "ms") ? 1e-3 : ($3 == "ns") ? 1e-9 : 1); print (t > 0) ? n / t : 0; exit }' "$out")
      ;;
  esac
  # A run with nothing to show says why under the row (oha's first error, or the run's last line).
  if [ "${done_requests:-0}" = 0 ]; then
    local why
    why=$(awk '/^Error distribution:/ { getline; sub(/^ +/, ""); print; exit }' "$out")
    [ -n "$why" ] || why=$(grep -v '^ *$' "$out" | tail -n 1)
    printf '> %s: no successful request in one round: %s\n' "$tool" "$why" >>"$work/notes"
  fi
  local hz
  hz=$(getconf CLK_TCK)
  awk -v r="$rate" -v u="$user" -v s="$sys" -v n="$done_requests" -v m="$rss" \
    -v t="$((ticks_after - ticks_before))" -v hz="$hz" -v w="${window:-$(awk -v a="$started" -v b="$ended" 'BEGIN { print b - a }')}" \
    -v c0="$core_before" -v c1="$core_after" \
    'BEGIN {
      n = (n > 0 ? n : 1); w = (w > 0 ? w : 1); split(c0, b, " "); split(c1, e, " ")
      core = (e[2] > b[2]) ? (e[1] - b[1]) * 100 / (e[2] - b[2]) : 0
      client_core = (e[4] > b[4]) ? (e[3] - b[3]) * 100 / (e[4] - b[4]) : 0
      printf "%.0f %.3f %d %.0f %.3f %.0f %.0f\n", r, (u + s) * 1e6 / n, m, t / hz * 100 / w, t / hz * 1e6 / n, core, client_core }'
}

# A note for a peer whose median out-ran h2load-rs: was the server, not the client, the limit?
# The 12th argument names our side when it is not the row's first tool (a variant such as
# "h2load-rs --io uring"); the note then says which of ours it is about.
explain() {
  awk -v t="$1" -v r="$2" -v s="$3" -v c="$4" -v or="$5" -v os="$6" -v oc="$7" -v peer_low="$8" -v ours_high="$9" \
    -v peer_cost="${10}" -v ours_cost="${11}" -v who="${12:-}" 'BEGIN {
    if (or >= r) exit
    us = (who == "") ? "h2load-rs" : who
    lead = (who == "") ? "> vs " t : "> " who " vs " t
    if (s >= 95 && os >= 95 && ours_high >= peer_low)
      printf "%s, throughput %.2f: the server was saturated in both (%d%% and %d%% of its core), so it set the rate; it spent %.2f µs per request under %s and %.2f under %s, and the rates of the rounds overlap (ranges above): variation at the server'"'"'s limit, not a slower client. %s used %.2fx the client CPU per request.\n", lead, or / r, os, s, ours_cost, us, peer_cost, t, us, oc / c
    else if (ours_high >= peer_low)
      printf "%s, throughput %.2f: %s'"'"'s median is lower, but the rates of the rounds overlap (ranges above; server at %d%% / %d%%): within the rounds'"'"' spread, more rounds would tell.\n", lead, or / r, us, os, s
    else
      printf "%s, throughput %.2f: %s is slower here (server at %d%% / %d%%, rounds do not overlap): needs work.\n", lead, or / r, us, os, s
  }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# A row: NAME KIND then "tool|command" entries; the first tool is h2load-rs (possibly with a
# suffix naming its flags, e.g. h2load-rs+resume), the peers are compared with it. Further
# h2load-rs entries ("h2load-rs --io uring", named by their flags) are variants of ours, measured
# in the same interleaved rounds: each is compared with the row's first peer (the tool the issue
# sets as the goal), and the peers' ratios stay against the first entry.
row() {
  local name=$1 kind=$2
  shift 2
  local entries=("$@")
  # A row of variants alone compares them with the first entry.
  local first=${entries[0]%%|*} peer=${entries[0]%%|*} entry
  for entry in "${entries[@]:1}"; do
    [[ ${entry%%|*} == h2load-rs* ]] || { peer=${entry%%|*}; break; }
  done
  rm -f "$work"/row.* "$work/notes"
  for ((round = 1; round <= rounds; round++)); do
    for entry in "${entries[@]}"; do
      local tool=${entry%%|*} command=${entry#*|}
      # shellcheck disable=SC2086 # the command is a word list on purpose
      measure "$tool" "$kind" $command >>"$work/row.$tool"
      # Every round's figures and output, kept to check a median afterwards (rows overwrite row.*).
      {
        printf '=== %s | %s | round %s: %s\n' "$name" "$tool" "$round" "$(tail -n 1 "$work/row.$tool")"
        cat "$work/out"
        # A gRPC run that wrote --json $work/grpc-run.json: its counts and per-message round trips.
        if [ -f "$work/grpc-run.json" ]; then
          python3 - "$work/grpc-run.json" <<'PY'
import json, sys
cell = json.load(open(sys.argv[1]))["cells"][0]
grpc, rtt = cell.get("grpc") or {}, cell["latency"].get("grpc_round_trip") or {}
pct = rtt.get("percentiles") or {}
print("json: grpc OK %s, sent messages %s, received messages %s, round trip p50 %s us, p99 %s us" % (
    (grpc.get("statuses") or {}).get("OK", 0), (grpc.get("sent") or {}).get("messages", 0),
    (grpc.get("received") or {}).get("messages", 0), pct.get("p50", "none"), pct.get("p99", "none")))
PY
          rm -f "$work/grpc-run.json"
        fi
      } >>"$work/rounds.log"
    done
  done
  local unit="req/s, median (min–max)" cpu_unit="client CPU µs/request" server_unit="server CPU µs/request"
  [[ $kind == bytes:* ]] && unit="MB/s, median (min–max)" cpu_unit="client CPU µs for the download" server_unit="server CPU µs for the download"
  [ "$kind" = grpc ] && unit="calls/s, median (min–max)" cpu_unit="client CPU µs/call" server_unit="server CPU µs/call"
  [[ $kind == grpc-stream:* ]] && unit="messages/s, median (min–max)" cpu_unit="client CPU µs/message" server_unit="server CPU µs/message"
  printf '\n### %s\n\n| tool | %s | %s | peak RSS KB | server CPU %% | %s | ratio throughput | ratio CPU | ratio RSS |\n|---|---|---|---|---|---|---|---|---|\n' \
    "$name" "$unit" "$cpu_unit" "$server_unit" >>"$work/report"
  # Medians first: a variant's line, printed before its peer's, needs the peer's figures.
  local -A rate cpu rss server server_cost low high
  local tool core client_core
  for entry in "${entries[@]}"; do
    tool=${entry%%|*}
    rate[$tool]=$(awk '{ print $1 }' "$work/row.$tool" | median)
    low[$tool]=$(awk '{ print $1 }' "$work/row.$tool" | sort -g | head -1)
    high[$tool]=$(awk '{ print $1 }' "$work/row.$tool" | sort -g | tail -1)
    cpu[$tool]=$(awk '{ print $2 }' "$work/row.$tool" | median)
    rss[$tool]=$(awk '{ print $3 }' "$work/row.$tool" | median)
    server[$tool]=$(awk '{ print $4 }' "$work/row.$tool" | median)
    server_cost[$tool]=$(awk '{ print $5 }' "$work/row.$tool" | median)
    core=$(awk '{ print $6 }' "$work/row.$tool" | median)
    client_core=$(awk '{ print $7 }' "$work/row.$tool" | median)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$tool" "${rate[$tool]}" "${cpu[$tool]}" "${server[$tool]}" "$core" "$client_core" >>"$work/summary"
  done
  for entry in "${entries[@]}"; do
    tool=${entry%%|*}
    # Whose figures the ratios of this line compare: ours against the peer (a variant's line) or
    # the first entry against this peer (a peer's line; shown as the first's figures / the peer's).
    local ours=$first other=$tool label=$tool
    if [ "$tool" != "$first" ] && [[ $tool == h2load-rs* ]]; then
      ours=$tool other=$peer label="**$tool** (ratios vs $peer)"
    fi
    awk -v t="$tool" -v f="$first" -v label="$label" -v r="${rate[$tool]}" -v c="${cpu[$tool]}" -v m="${rss[$tool]}" \
      -v k="$kind" -v sc="${server[$tool]}" -v sv="${server_cost[$tool]}" -v lo="${low[$tool]}" -v hi="${high[$tool]}" \
      -v or="${rate[$ours]}" -v oc="${cpu[$ours]}" -v om="${rss[$ours]}" \
      -v pr="${rate[$other]:-0}" -v pc="${cpu[$other]:-0}" -v pm="${rss[$other]:-0}" 'BEGIN {
      d = (k ~ /^bytes/) ? 1048576 : 1
      shown = sprintf("%.0f (%.0f–%.0f)", r / d, lo / d, hi / d)
      if (t == f)
        printf "| **%s** | %s | %.2f | %d | %d | %.2f | | | |\n", t, shown, c, m, sc, sv
      else
        printf "| %s | %s | %.2f | %d | %d | %.2f | %s | %.2f | %.2f |\n", label, shown, c, m, sc, sv,
          (pr > 0) ? sprintf("%.2f", or / pr) : "–", (oc > 0) ? pc / oc : 0, (om > 0) ? pm / om : 0 }' >>"$work/report"
    if [ "$tool" != "$first" ]; then
      local who=""
      [ "$ours" = "$first" ] || who=$ours
      explain "$other" "${rate[$other]:-0}" "${server[$other]:-0}" "${cpu[$other]:-0}" "${rate[$ours]}" "${server[$ours]}" \
        "${cpu[$ours]}" "${low[$other]:-0}" "${high[$ours]}" "${server_cost[$other]:-0}" "${server_cost[$ours]}" "$who" >>"$work/notes"
      # Issue 16's goal for a variant: the peer's throughput at half its CPU per request.
      [ -z "$who" ] || awk -v w="$who" -v p="$other" -v r="${rate[$ours]}" -v c="${cpu[$ours]}" -v pr="${rate[$other]:-0}" \
        -v pc="${cpu[$other]:-0}" 'BEGIN {
        tr = (pr > 0) ? r / pr : 0; cr = (pc > 0) ? c / pc : 0
        printf "> Goal for %s vs %s: throughput ratio %.2f (goal >= 1.0), client CPU per request %.2fx %s'"'"'s (goal <= 0.5): %s.\n",
          w, p, tr, cr, p, (tr >= 1.0 && cr > 0 && cr <= 0.5) ? "met" : "**not met**" }' >>"$work/notes"
    fi
  done
  if [ -s "$work/notes" ]; then
    echo >>"$work/report"
    cat "$work/notes" >>"$work/report"
    rm "$work/notes"
  fi
  tail -n +1 "$work/report" | tail -n $((${#entries[@]} + 4))
}

# --rate pacing against an idle nginx: how late each request starts after its scheduled time
# (rate.delay_*), whether response − service time (p50) is that lateness alone, the rate achieved,
# and the generator's CPU. Goal: delay p50 <= 50 µs and p99 <= 200 µs, response − service p50
# <= 50 µs, the rate within 0.5 %. One thread; 5 s per run; medians of the rounds.
pacing() {
  local h1="http://127.0.0.1:$h1_port/ping"
  local builds=("h2load-rs|$ours")
  [ -n "${BASELINE:-}" ] && builds+=("$(baseline_name)|$BASELINE")
  {
    printf '\n### Pacing: --rate against nginx /ping, HTTP/1.1, one thread, 5 s\n\n'
    printf '| build | run | achieved req/s | delay p50 µs | delay p99 µs | response p50 − service p50 µs | generator CPU %% | verdict |\n|---|---|---|---|---|---|---|---|\n'
  } >>"$work/report"
  local config build
  # The last row is many idle connections sharing one schedule (wrk2's typical -c): each must
  # wake only for its own send time. 1 s of warm-up keeps its 1000 connects out of the figures.
  for config in "2000 8" "20000 8" "1000 4" "1000 1000"; do
    local rate=${config% *} clients=${config#* }
    for build in "${builds[@]}"; do
      local name=${build%%|*} binary=${build#*|} round
      : >"$work/pacing.rows"
      for ((round = 1; round <= rounds; round++)); do
        taskset -c $client_cpu "$binary" --h1 -t 1 -c "$clients" --rate "$rate" -D 5s --warm-up-time 1s --json "$work/pacing.json" "$h1" >/dev/null
        python3 - "$work/pacing.json" >>"$work/pacing.rows" <<'PY'
import json, sys
cell = json.load(open(sys.argv[1]))["cells"][0]
rate, latency = cell["rate"], cell["latency"]
gap = latency["request"]["percentiles"]["p50"] - latency["service"]["percentiles"]["p50"]
print(rate["achieved_per_s"], rate["delay_p50_us"], rate["delay_p99_us"], gap, cell["generator_cpu_percent"])
PY
      done
      local column values=()
      for column in 1 2 3 4 5; do
        values+=("$(awk -v c=$column '{ print $c }' "$work/pacing.rows" | median)")
      done
      awk -v b="$name" -v r="$rate" -v c="$clients" -v a="${values[0]}" -v p50="${values[1]}" -v p99="${values[2]}" \
        -v gap="${values[3]}" -v cpu="${values[4]}" 'BEGIN {
        ok = (p50 <= 50 && p99 <= 200 && gap <= 50 && a >= r * 0.995 && a <= r * 1.005)
        printf "| %s | --rate %d -c %d | %.1f | %d | %d | %d | %.1f | %s |\n", b, r, c, a, p50, p99, gap, cpu, ok ? "meets the goal" : "misses the goal" }' >>"$work/report"
    done
  done
  tail -n 10 "$work/report"
}

# Replaces the section of RESULTS.md under heading $1 (from it to the next heading) with this
# run's report, $2 added below it as a paragraph; a file without that heading gets it at the end.
splice_heading() {
  python3 - "$results" "$work/report" "$1" "$2" <<'PY'
import re, sys
path, report, heading, note = sys.argv[1], open(sys.argv[2]).read().strip("\n"), sys.argv[3], sys.argv[4]
if note:
    report += "\n\n" + note + "\n"
text = open(path).read()
pattern = re.compile(r"\n" + re.escape(heading) + r".*?(?=\n### |\n<!-- |\Z)", re.S)
text = pattern.sub(lambda _: "\n" + report, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + report
open(path, "w").write(text)
PY
}

# When and how loaded a section run alone was measured: "Measured by `benches/compare.sh $1` on
# DATE (this section only), load average L at the start" (it heads the section, written before
# its rows run).
measured_alone() {
  printf 'Measured by `benches/compare.sh %s` on %s (this section only), load average %s at the start' \
    "$1" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(cut -d ' ' -f 1 /proc/loadavg)"
}

# The HTTP/3 section: 1 GiB downloads over h3 beside h2 on the same servers, h2load-rs's h3
# against oha's (the only HTTP/3 peer: Debian's h2load and curl have none) on Caddy and on the
# built-in target with h2 beside it, and who set the pace. Between markers, so that
# `compare.sh h3` can replace it alone.
h3_section() {
  local ca="$root/certs/ca.crt" gib=$((1 << 30)) d=$h3_seconds
  local caddy="https://127.0.0.1:$caddy_port" target="https://127.0.0.1:$tls_target_port"
  local oha_version caddy_version
  oha_version=$("$oha_h3" --version | awk '{ print $2 }')
  caddy_version=$(caddy version | awk '{ print $1 }')
  {
    printf '\n%s\n\n### HTTP/3: how measured\n\n' "$h3_begin"
    echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds interleaved round(s) per row, medians shown, ratios as above."
    echo "Servers on CPU $server_cpu: Caddy $caddy_version (\`protocols h1 h2 h3\`, one port: TLS over TCP and QUIC over UDP;"
    echo "Go follows the pinning, GOMAXPROCS 1) and the built-in target (\`serve --tls --threads 1\`, h3 on the"
    echo "UDP side of its TLS port); clients on CPU $client_cpu, all trusting certs/ca.crt (\`--cacert\`)."
    echo "The HTTP/3 peer is oha $oha_version built with \`--features http3\` (quinn and the h3 crate);"
    echo "Debian's h2load and curl have no HTTP/3. Request rows run ${d} s each (\`-D\`, oha \`-z\`), so a"
    echo "stalled client still finishes, and oha's rate is its responses over that window (its printed rate and"
    echo "Total add a 30 s wait at exit, see the end of this section); its 1 GiB download is timed by the"
    echo "request itself for the same reason. -c 10 -m 10 is oha's -c 10 -p 10. h2 rows on the same servers"
    echo "show what the same server does over TCP. Load average at the start: $(cut -d' ' -f1 /proc/loadavg)"
    echo "(other work on the machine shows below as a server core busier than the server's own share; the"
    echo "core columns cover each tool's whole run, for oha's h3 rows its 30 s wait at exit too)."
  } >>"$work/report"
  : >"$work/summary"
  server_pids=$caddy_pid
  row "one 1 GiB download over h3 (Caddy)" "bytes:$gib" \
    "h2load-rs|$ours --proto h3 --cacert $ca -n 1 $caddy/1g" \
    "oha|$oha_h3 --no-tui --http-version 3 --cacert $ca -c 1 -n 1 $caddy/1g"
  row "one 1 GiB download over h2 (Caddy, TLS)" "bytes:$gib" \
    "h2load-rs|$ours --cacert $ca -n 1 $caddy/1g" \
    "h2load|h2load -n 1 $caddy/1g" \
    "curl|curl -s -o /dev/null -w %{speed_download} --http2 --cacert $ca $caddy/1g"
  server_pids=$tls_target_pid
  row "one 1 GiB download over h3 (built-in target)" "bytes:$gib" \
    "h2load-rs|$ours --proto h3 --cacert $ca -n 1 $target/bytes/$gib" \
    "oha|$oha_h3 --no-tui --http-version 3 --cacert $ca -c 1 -n 1 $target/bytes/$gib"
  row "one 1 GiB download over h2 (built-in target, TLS)" "bytes:$gib" \
    "h2load-rs|$ours --cacert $ca -n 1 $target/bytes/$gib" \
    "h2load|h2load -n 1 $target/bytes/$gib" \
    "curl|curl -s -o /dev/null -w %{speed_download} --http2 --cacert $ca $target/bytes/$gib"

  local caddy_h3="h3, -c 10 -m 10, Caddy /ping, $d s" caddy_h2="h2, -c 10 -m 10, Caddy /ping, $d s"
  local target_h3="h3, -c 10 -m 10, built-in target /ping, $d s"
  local target_h2="h2, -c 10 -m 10, built-in target (TLS) /ping, $d s"
  server_pids=$caddy_pid
  row "$caddy_h3" requests \
    "h2load-rs|$ours --proto h3 --cacert $ca -c 10 -m 10 -D ${d}s $caddy/ping" \
    "oha|$oha_h3 --no-tui --http-version 3 --cacert $ca -c 10 -p 10 -z ${d}s $caddy/ping"
  row "$caddy_h2" requests \
    "h2load-rs|$ours --cacert $ca -c 10 -m 10 -D ${d}s $caddy/ping" \
    "h2load|h2load -c 10 -m 10 -D $d $caddy/ping" \
    "oha|$oha --no-tui --http2 --cacert $ca -c 10 -p 10 -z ${d}s $caddy/ping"
  server_pids=$tls_target_pid
  row "$target_h3" requests \
    "h2load-rs|$ours --proto h3 --cacert $ca -c 10 -m 10 -D ${d}s $target/ping" \
    "oha|$oha_h3 --no-tui --http-version 3 --cacert $ca -c 10 -p 10 -z ${d}s $target/ping"
  target_h2_row "$target_h2"

  {
    printf '\n### HTTP/3: who sets the pace (-c 10 -m 10, server pinned to one core)\n\n'
    printf '| row | client | req/s | server CPU %% | CPU %d (server) busy, all processes %% | CPU %d (client) busy, all processes %% | verdict |\n|---|---|---|---|---|---|---|\n' "$server_cpu" "$client_cpu"
    local name
    for name in "$caddy_h3" "$caddy_h2" "$target_h3" "$target_h2"; do
      awk -F'\t' -v n="$name" '$1 == n {
        verdict = ($5 >= 90) ? "the server sets the pace" : ($6 >= 90) ? "the server'"'"'s core was full: other processes took " ($6 - $5) " %" : ($7 >= 90) ? "the client'"'"'s core was full" : "the server waits: the client or the protocol sets the pace"
        printf "| %s | %s | %.0f | %d | %d | %d | %s |\n", n, $2, $3, $5, $6, $7, verdict }' "$work/summary"
    done
    echo
    for name in "$caddy_h3" "$target_h3"; do
      awk -F'\t' -v n="$name" '$1 == n && $2 == "h2load-rs" { r = $3; c = $4 }
        $1 == n && $2 == "oha" { pr = $3; pc = $4 }
        END {
          tr = (pr > 0) ? r / pr : 0; cr = (pc > 0) ? c / pc : 0
          printf "> Goal vs oha, %s: throughput ratio %.2f (goal >= 1.0), client CPU per request %.2fx oha'"'"'s (goal <= 0.5): %s.\n",
            n, tr, cr, (tr >= 1.0 && cr > 0 && cr <= 0.5) ? "met" : "**not met**" }' "$work/summary"
    done
  } >>"$work/report"
  # The issue's figure for oha (326 req/s, Caddy 2 % busy), run as it was: a request count.
  server_pids=$caddy_pid
  local repro
  repro=$(measure oha requests "$oha_h3" --no-tui --http-version 3 --cacert "$ca" -c 10 -p 10 -n 10000 "$caddy/ping")
  awk -v m="$repro" -v total="$(oha_seconds Total "$work/out")" -v slowest="$(oha_seconds Slowest "$work/out")" \
    -v average="$(oha_seconds Average "$work/out")" 'BEGIN {
      split(m, f, " ")
      if (total <= 0 || average <= 0) { printf "\n> oha'"'"'s HTTP/3 reproduction run (-n 10000) failed.\n"; exit }
      active = 10000 * average / 100
      printf "\n> oha'"'"'s HTTP/3 stall, reproduced: `oha --http-version 3 -c 10 -p 10 -n 10000` on Caddy printed %.0f req/s", f[1]
      printf " over %.1f s with Caddy %d%% busy and oha using %.1f µs of CPU per request. Its slowest request took %.1f ms", total, f[4], f[2], slowest * 1000
      printf " and the average %.1f ms at 100 in flight, so the 10,000 responses came in about %.2f s (~%.0f req/s);", average * 1000, active, 10000 / active
      if (total - active > 5) {
        printf " the other %.1f s oha waits to close its connections: h3'"'"'s graceful shutdown sends GOAWAY and then waits", total - active
        printf " for the server to close, which Caddy leaves to its 30 s idle timeout. A tail at exit, not a per-request stall;"
        printf " the rows above take oha'"'"'s rate and the server'"'"'s CPU %% over the -z window.\n"
      } else
        printf " no tail at exit this time (%.1f s in all).\n", total }' >>"$work/report"
  printf '\n%s\n' "$h3_end" >>"$work/report"
  sed -n "/^### HTTP\/3: who sets the pace/,\$p" "$work/report"
}

# The gRPC section: unary calls and bidirectional streams over h2c against the grpc-go server (one
# core), h2load-rs against ghz, the same message and the same calls in flight; each round's OK
# count (and, for streams, message count) checked; who set the pace, and the issue's goal. Between
# markers, so that `compare.sh grpc` can replace it alone.
grpc_section() {
  local url="http://127.0.0.1:$grpc_port" proto="$root/tests/grpc-target/proto/probe.proto" n=$grpc_calls
  local streams=$grpc_streams messages=$grpc_stream_messages
  local grpc_go
  grpc_go=$(awk '$1 == "google.golang.org/grpc" { print $2; exit }' "$root/tests/grpc-target/go.mod")
  {
    printf '\n%s\n\n### gRPC: how measured\n\n' "$grpc_begin"
    echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds interleaved round(s) per row, medians shown, ratios as above."
    echo "Server on CPU $server_cpu: the grpc-go ($grpc_go) server of tests/grpc-target (\`-h2c\`, GOMAXPROCS=1),"
    echo "h2loadrs.probe.Probe/Unary answering Req{name:\"x\"} with Resp{message:\"Hello x\"}. Clients on CPU $client_cpu:"
    echo "h2load-rs (one thread) and ghz v0.121.0 (Go follows the pinning: GOMAXPROCS 1), both encoding the"
    echo "message from JSON with tests/grpc-target/proto/probe.proto (3 bytes). How the load was matched:"
    echo "h2load-rs \`-c 10 -m 100\` is 10 connections with up to 100 calls in flight on each (prior-knowledge"
    echo "h2c for an http:// URL). ghz's \`-c\` is its number of workers in all, each making one call at a time"
    echo "(no \`--async\`), and \`--connections K\` shares them evenly over K connections (its help: \"Concurrency"
    echo "is distributed evenly among all the connections\"), so \`--connections 10 -c 1000\` is 100 workers on"
    echo "each of 10 connections: 1000 calls in flight, 100 per connection, as h2load-rs's. Both run the same"
    echo "\`-n\` calls. Rate: calls answered with grpc-status OK over the tool's own timer (h2load-rs \"finished"
    echo "in\", ghz \"Total\", which starts once its connections are up); client CPU per call: wait4's rusage over"
    echo "OK calls; server CPU %: utime+stime of the grpc-go process (/proc/PID/stat) before and after each run,"
    echo "over the run's wall time. Every run's OK count is checked against \`-n\` (below each table). Commands:"
    echo "\`h2load-rs --grpc /h2loadrs.probe.Probe/Unary --grpc-proto probe.proto --grpc-data '{\"name\":\"x\"}' -t 1"
    echo "-c 10 -m 100 -n $n http://127.0.0.1:$grpc_port\` and \`ghz --insecure --proto probe.proto --call"
    echo "h2loadrs.probe.Probe.Unary -d '{\"name\":\"x\"}' -n $n -c 1000 --connections 10 127.0.0.1:$grpc_port\`."
    echo
    echo "Bidirectional streams: Probe/Bidi, whose handler answers each Req{name:\"x\"} with one"
    echo "Resp{message:\"Hello x\"} and ends the stream OK at the client's half-close. $streams streams of $messages"
    echo "messages each in both tools, the same concurrency as the unary row (1000 streams open: h2load-rs"
    echo "\`-c 10 -m 100\`, ghz \`--connections 10 -c 1000\`). Both send a stream's messages back to back:"
    echo "h2load-rs with \`--grpc-stream-interval 0\` (as fast as flow control allows, each reply still timed"
    echo "against its message; without it h2load-rs sends each message once the previous one's reply has"
    echo "arrived, a ping-pong that is not what ghz does), ghz as it always does (one goroutine sends the"
    echo "stream's messages, \`--stream-call-count $messages\` cycling the one-message \`-D\` array, then half-closes,"
    echo "while another reads the replies). Counted in messages: h2load-rs's received messages, ghz's OK"
    echo "streams x $messages (ghz counts streams, not messages; its debug log shows each stream's messages, below);"
    echo "rate over the same timers as above, client and server CPU per message; streams/s is messages/s / $messages."
    echo "Commands: \`h2load-rs --grpc /h2loadrs.probe.Probe/Bidi --grpc-proto probe.proto --grpc-data"
    echo "'{\"name\":\"x\"}' --grpc-stream-messages $messages --grpc-stream-interval 0 -t 1 -c 10 -m 100 -n $streams"
    echo "--json FILE http://127.0.0.1:$grpc_port\` and \`ghz --insecure --proto probe.proto --call"
    echo "h2loadrs.probe.Probe.Bidi -D bidi.json --stream-call-count $messages -n $streams -c 1000 --connections 10"
    echo "127.0.0.1:$grpc_port\` (bidi.json: \`[{\"name\":\"x\"}]\`)."
    echo
    echo "Load average at the start: $(cut -d' ' -f1 /proc/loadavg) (other work on the machine shows below as a"
    echo "server core busier than the server's own share)."
  } >>"$work/report"
  : >"$work/summary"
  server_pids=$grpc_pid
  local unary="gRPC unary over h2c, -c 10 -m 100, grpc-go Probe/Unary, $n calls"
  row "$unary" grpc \
    "h2load-rs|$ours --grpc /h2loadrs.probe.Probe/Unary --grpc-proto $proto --grpc-data {\"name\":\"x\"} -t 1 -c 10 -m 100 -n $n $url" \
    "ghz|$ghz --insecure --proto $proto --call h2loadrs.probe.Probe.Unary -d {\"name\":\"x\"} -n $n -c 1000 --connections 10 127.0.0.1:$grpc_port"
  grpc_ok_check "$unary" "$n" >>"$work/report"
  local bidi="gRPC bidi streams over h2c, $messages messages each back to back, -c 10 -m 100, grpc-go Probe/Bidi, $streams streams"
  grpc_bidi_row "$bidi" "$streams" "$messages"
  {
    printf '\n### gRPC: who sets the pace, and the goal\n\n'
    printf '| row | client | calls/s (unary) or messages/s (bidi) | streams/s (bidi) | client CPU µs/call or /message | client CPU %% (its own) | server CPU %% | CPU %d (server) busy, all processes %% | CPU %d (client) busy, all processes %% | verdict |\n|---|---|---|---|---|---|---|---|---|---|\n' "$server_cpu" "$client_cpu"
    # The client's own share of its core: its CPU per call (message) times its rate. Verdict: whose
    # core was full, and whether the tool itself (server or client) or other work filled it.
    local name per
    for name in "$unary" "$bidi"; do
      per=1
      [ "$name" != "$bidi" ] || per=$messages
      awk -F'\t' -v n="$name" -v per="$per" '$1 == n {
        own = $3 * $4 / 1e4
        verdict = ($5 >= 90) ? "the server sets the pace" : (own >= 90) ? "the client sets the pace (its own core full)" : ($6 >= 90) ? "the server'"'"'s core was full: other processes took " ($6 - $5) " %" : ($7 >= 90) ? "the client'"'"'s core was full: other processes took " int($7 - own) " %" : "neither core full: the calls in flight and their latency set the pace"
        printf "| %s | %s | %.0f | %s | %.2f | %.0f | %d | %d | %d | %s |\n", n, $2, $3, (per > 1) ? sprintf("%.0f", $3 / per) : "", $4, own, $5, $6, $7, verdict }' "$work/summary"
    done
    echo
    # The issue's goal: ghz's throughput (or both server-bound) at half its client CPU per call
    # (per message for streams).
    for name in "$unary" "$bidi"; do
      per=call
      [ "$name" != "$bidi" ] || per=message
      awk -F'\t' -v n="$name" -v per="$per" '$1 == n && $2 == "h2load-rs" { r = $3; c = $4; s = $5 }
        $1 == n && $2 == "ghz" { pr = $3; pc = $4; ps = $5 }
        END {
          tr = (pr > 0) ? r / pr : 0; cr = (pc > 0) ? c / pc : 0; bound = (s >= 90 && ps >= 90)
          printf "> Goal vs ghz, %s: throughput ratio %.2f (goal >= 1.0, or both server-bound: server at %d%% under h2load-rs, %d%% under ghz), client CPU per %s %.3fx ghz'"'"'s (goal <= 0.5): %s.\n",
            n, tr, s, ps, per, cr, ((tr >= 1.0 || bound) && cr > 0 && cr <= 0.5) ? "met" : "**not met**" }' "$work/summary"
    done
    echo
    echo "Load average at the end: $(cut -d' ' -f1 /proc/loadavg)."
    printf '\n%s\n' "$grpc_end"
  } >>"$work/report"
  sed -n "/^### gRPC: who sets the pace/,\$p" "$work/report"
}

# The OK calls of every run of row $1 (h2load-rs: "grpc status: N OK"; ghz: "[OK]   N responses"),
# from rounds.log, checked against the calls asked for ($2): a note for under the table.
grpc_ok_check() {
  awk -v row="$1" -v want="$2" '
    function close_run() {
      if (tool != "") { list[tool] = list[tool] sep[tool] got; sep[tool] = ", "; if (got != want) bad = 1 }
      tool = ""
    }
    /^=== / {
      close_run(); split(substr($0, 5), f, " [|] ")
      if (f[1] == row) { tool = f[2]; got = "none"; if (!(tool in list)) order[++k] = tool }
      next }
    tool != "" && /^grpc status: / { got = ($4 ~ /^OK/) ? $3 : 0 }
    tool != "" && $1 == "[OK]" { got = $2 }
    END {
      close_run()
      printf "\n> OK calls per run, checked against -n %d:", want
      for (i = 1; i <= k; i++) printf "%s %s %s", (i > 1) ? ";" : "", order[i], list[order[i]]
      printf ": %s\n", bad ? "**mismatch** (see target/compare/rounds.log)" : "every run had all of them answered OK, the same count in both tools"
    }' "$work/rounds.log"
}

# The bidirectional-stream row, named $1: $2 streams (-n, both tools) of $3 messages each on
# Probe/Bidi, sent back to back by both (h2load-rs --grpc-stream-interval 0; ghz's send goroutine
# never waits for replies unless --stream-interval spaces them), 1000 streams open as in the unary
# row. ghz's side: -D, a JSON array of messages sent in turn (a file: an unquoted [ ] would be a
# glob here; its one message cycled), --stream-call-count closes each stream after that many
# sends; -n counts streams. OK counts streams in both; rates are in messages (measure's
# grpc-stream:M). Then the checks below the table (grpc_stream_check).
grpc_bidi_row() {
  local name=$1 n=$2 messages=$3 proto="$root/tests/grpc-target/proto/probe.proto" url="http://127.0.0.1:$grpc_port"
  printf '[{"name":"x"}]\n' >"$work/bidi.json"
  rm -f "$work/grpc-run.json"
  row "$name" "grpc-stream:$messages" \
    "h2load-rs|$ours --grpc /h2loadrs.probe.Probe/Bidi --grpc-proto $proto --grpc-data {\"name\":\"x\"} --grpc-stream-messages $messages --grpc-stream-interval 0 -t 1 -c 10 -m 100 -n $n --json $work/grpc-run.json $url" \
    "ghz|$ghz --insecure --proto $proto --call h2loadrs.probe.Probe.Bidi -D $work/bidi.json --stream-call-count $messages -n $n -c 1000 --connections 10 127.0.0.1:$grpc_port"
  grpc_stream_check "$name" "$n" "$messages" >>"$work/report"
}

# Under the bidi row: every run's OK streams (h2load-rs from its --json, cells[0].grpc.statuses.OK,
# and its cells[0].grpc.received.messages; ghz's "[OK] N responses"), checked against -n $2 and
# $2 x $3 messages; what ghz's debug log shows of a stream's messages (ghz prints no message count;
# its log is zap's sampled one, 100 lines a second per kind and then every 100th, so a run of 9
# streams, under that); and h2load-rs's per-message round trips (ghz times only whole streams).
grpc_stream_check() {
  local row=$1 want=$2 messages=$3 proto="$root/tests/grpc-target/proto/probe.proto"
  awk -v row="$row" -v want="$want" -v m="$messages" '
    function close_run() {
      if (tool != "") {
        list[tool] = list[tool] sep[tool] got; sep[tool] = ", "
        if (got != want || (tool ~ /^h2load-rs/ && received != want * m)) bad = 1
        if (tool ~ /^h2load-rs/) { msgs[tool] = msgs[tool] sep2[tool] received; sep2[tool] = ", "
          p50[++runs] = a50; p99[runs] = a99 }
      }
      tool = ""
    }
    function median(v, n,  i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    /^=== / {
      close_run(); split(substr($0, 5), f, " [|] ")
      if (f[1] == row) { tool = f[2]; got = "none"; received = "none"; a50 = a99 = "none"; if (!(tool in list)) order[++k] = tool }
      next }
    # h2load-rs: its --json summary line (measure leaves "json: grpc OK N, sent messages S, received messages R, round trip p50 A us, p99 B us").
    tool != "" && /^json: grpc OK / { got = $4 + 0; received = $10 + 0; a50 = $14; a99 = $17 }
    tool != "" && $1 == "[OK]" { got = $2 }
    END {
      close_run()
      printf "\n> OK streams per run, checked against -n %d (h2load-rs: cells[0].grpc.statuses.OK of its --json; ghz: [OK] responses, one per stream):", want
      for (i = 1; i <= k; i++) printf "%s %s %s", (i > 1) ? ";" : "", order[i], list[order[i]]
      printf ". Messages received per run (h2load-rs: cells[0].grpc.received.messages), checked against %d x %d = %d:", want, m, want * m
      for (i = 1; i <= k; i++) if (order[i] ~ /^h2load-rs/) printf " %s %s", order[i], msgs[order[i]]
      printf ". Result: %s.\n", bad ? "**mismatch** (see target/compare/rounds.log)" : "every run had every stream answered OK and, in h2load-rs, every message answered"
      if (runs > 0)
        printf "\n> h2load-rs per-message round trip (send of a message to its reply; cells[0].latency.grpc_round_trip.percentiles), median of the runs: p50 %.1f ms, p99 %.1f ms (1000 streams open, each sending its %d messages back to back: up to 1000 x %d messages in flight at once, so mostly queueing, about in flight / rate by Little'"'"'s law). ghz reports no per-message latency: its latency figures are whole streams, first send to the final status.\n", median(p50, runs) / 1000, median(p99, runs) / 1000, m, m
    }' "$work/rounds.log"
  # ghz counts streams, not messages: one small run with its debug log, kept under the log's sampling.
  rm -f "$work/ghz-bidi-debug.log"
  taskset -c $client_cpu "$ghz" --insecure --proto "$proto" --call h2loadrs.probe.Probe.Bidi -D "$work/bidi.json" \
    --stream-call-count "$messages" -n 9 -c 9 --connections 3 --debug "$work/ghz-bidi-debug.log" "127.0.0.1:$grpc_port" >"$work/ghz-bidi-debug.out" 2>&1 || true
  touch "$work/ghz-bidi-debug.log"
  awk -v m="$messages" -v out="$(awk '$1 == "[OK]" { print $2; exit }' "$work/ghz-bidi-debug.out")" '
    /"message":"Send message"/ { sent++ }
    /"message":"Receive message"/ && /"error":null/ { received++ }
    /"message":"Close send"/ { closed++ }
    END {
      ok = (out == 9 && sent == 9 * m && received == 9 * m && closed == 9)
      printf "\n> ghz prints no message count; its debug log (`--debug`) of a separate run of 9 streams (-c 9 --connections 3, below the log'"'"'s sampling) shows %d OK streams, %d messages sent, %d replies received, %d half-closes: %s.\n",
        out, sent, received, closed, ok ? sprintf("%d each way per stream, as asked", m) : "**not the " m " each way asked for**" }' "$work/ghz-bidi-debug.log"
}

# The TLS-handshake section: new TLS connections per second, one request per connection, against
# nghttpx pinned to one core; full handshakes and resumed ones (--tls-resume), h1 and h2, beside
# h2load's -c N -n N (N connections of one request each; h2load cannot resume sessions, so its
# rows are full handshakes, and they are the peer of both kinds). Between markers, so that
# `compare.sh tls` can replace it alone.
tls_section() {
  local ca="$root/certs/ca.crt" url="https://127.0.0.1:$tls_port/ping" n=$tls_connections c=$tls_clients
  # h2load opens all N connections at once: it needs N descriptors.
  ulimit -n "$(ulimit -Hn)"
  {
    printf '\n%s\n\n### TLS handshakes: how measured\n\n' "$tls_begin"
    echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds interleaved round(s) per row, medians shown, ratios as above."
    echo "Server on CPU $server_cpu: $(nghttpx --version | head -1) (\`--workers=1\`, TLS frontend offering h2 and"
    echo "http/1.1, its default session tickets) in front of nginx (1 worker, \`return 200\` for /ping, same core;"
    echo "nghttpx keeps its backend connections open, so the backend adds a few µs per request). Client on CPU $client_cpu."
    echo "Every connection carries one request. h2load-rs: \`-c $c -n $n --requests-per-connection 1\` (each of $c"
    echo "slots connects again after each answer), with \`--tls-resume\` in the resumed rows (per-thread session"
    echo "cache: TLS 1.3 tickets). h2load: \`-c $n -n $n\`, $n fresh connections of one request each, all opened at"
    echo "the start; it has no session resumption, so its rows are full handshakes in every row, the"
    echo "comparison a user of either tool faces. Rate: connections (= requests) per second; client CPU per"
    echo "request = per handshake. Load average at the start: $(cut -d' ' -f1 /proc/loadavg)."
  } >>"$work/report"
  : >"$work/summary"
  server_pids=$tls_server_pids
  local proto h2load_flag
  for proto in h1 h2; do
    h2load_flag=""
    [ $proto = h1 ] && h2load_flag="--h1"
    row "$proto over TLS, full handshakes, one request per connection, $n connections" requests \
      "h2load-rs|$ours --proto $proto --cacert $ca -c $c -n $n --requests-per-connection 1 $url" \
      "h2load|h2load $h2load_flag -c $n -n $n $url"
    row "$proto over TLS, resumed (h2load-rs --tls-resume), one request per connection, $n connections" requests \
      "h2load-rs+resume|$ours --proto $proto --cacert $ca -c $c -n $n --requests-per-connection 1 --tls-resume $url" \
      "h2load|h2load $h2load_flag -c $n -n $n $url"
  done
  {
    printf '\n### TLS handshakes: summary\n\n'
    printf '| row | h2load-rs conn/s | h2load conn/s | ratio throughput (goal >= 1.0) | client CPU µs/handshake, ours | h2load | ratio CPU (goal >= 1.0) |\n|---|---|---|---|---|---|---|\n'
    awk -F'\t' '$2 ~ /^h2load-rs/ { r[$1] = $3; c[$1] = $4; order[++k] = $1 }
      $2 == "h2load" { pr[$1] = $3; pc[$1] = $4 }
      END { for (i = 1; i <= k; i++) { n = order[i]
        printf "| %s | %.0f | %.0f | %.2f | %.1f | %.1f | %.2f |\n", n, r[n], pr[n], (pr[n] > 0) ? r[n] / pr[n] : 0, c[n], pc[n], (c[n] > 0) ? pc[n] / c[n] : 0 } }' "$work/summary"
    echo
    # What the resumed runs resumed, from their text reports.
    awk '/^=== .* \| h2load-rs\+resume \| round/ { row = $0; sub(/^=== /, "", row); sub(/ \|.*/, "", row) }
      /^TLS handshakes: / && row != "" { printf "> %s: %s\n", row, $0; row = "" }' "$work/rounds.log" | sort -u
  } >>"$work/report"
  printf '\n%s\n' "$tls_end" >>"$work/report"
  sed -n "/^### TLS handshakes: summary/,\$p" "$work/report"
}

# Where the client's CPU goes on h1 -c 100 against nginx, under --io epoll and --io uring:
# perf record -g of the client (its io_uring kernel threads too: perf follows them); each sample
# goes to the first function of its call chain that is not a generic helper, and that function to
# one kind (first match wins: user space, copying, io_uring, epoll, TCP/IP, syscall entry/exit,
# scheduler, other kernel). On loopback the sender's system call also
# runs the receiver's TCP path (softirq in its context), so TCP holds some of nginx's receive
# work too. In a VM the cpu-clock timer cannot fire with interrupts off, so time there shows up
# at the point they are turned back on (_raw_spin_unlock_irqrestore): the caller-attribution puts
# it with the work that disabled them.
profile() {
  local h1="http://127.0.0.1:$h1_port/ping" client name
  # wrk, the issue's peer for this row, as the reference: what a readiness-based client spends.
  local clients=("h2load-rs --io epoll|$ours --io epoll --h1 -c 100 -n $profile_requests $h1"
    "h2load-rs --io uring|$ours --io uring --h1 -c 100 -n $profile_requests $h1"
    "wrk|wrk -t1 -c100 -d3s $h1")
  {
    printf '\n%s\n\n### Client profile: h1 -c 100, nginx /ping, %s requests\n\n' "$profile_begin" "$profile_requests"
    echo "Measured on $(date -u '+%Y-%m-%d %H:%M UTC'): \`perf record -g -e cpu-clock -c $profile_period_ns\` (a sample per"
    echo "$((profile_period_ns / 1000)) µs of CPU) of \`h2load-rs --io BACKEND --h1 -c 100 -n $profile_requests\` and of"
    echo "\`wrk -t1 -c100 -d3s\` (the reference) pinned to CPU $client_cpu, nginx on"
    echo "CPU $server_cpu. Each sample counts for the first function of its call chain that is not a generic"
    echo "helper (locks, interrupt re-enabling, allocation, timers count for their caller), grouped by kind"
    echo "(the patterns are in \`profile()\`): share of the client's samples and µs per request. On loopback"
    echo "the client's send also runs nginx's TCP receive path and wakes nginx (sock_def_readable), so TCP/IP"
    echo "holds part of the server's work; io_uring's kernel threads are counted with the client."
    echo
  } >>"$work/report"
  local check
  if ! check=$(perf record -q -e cpu-clock -o "$work/perf.check" -- true 2>&1); then
    printf '> perf is not usable here (%s): no profile.\n\n%s\n' "$(echo "$check" | tail -n 1)" "$profile_end" >>"$work/report"
    tail -n 3 "$work/report"
    return
  fi
  local i=0
  rm -f "$work"/profile.*
  for client in "${clients[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2086 # the command is a word list on purpose
    perf record -q -g -e cpu-clock -c $profile_period_ns -o "$work/perf.$i.data" -- \
      taskset -c $client_cpu ${client#*|} >"$work/profile.$i.out" 2>&1 ||
      echo "${client%%|*} failed under perf (exit status $?)" >&2
    # Each sample goes to the first frame of its call chain that is not a generic helper (locks,
    # interrupt re-enabling, allocation: their cost belongs to who called them), and that frame to
    # a kind; then one line per function: samples, kind, function.
    perf script -i "$work/perf.$i.data" -F comm,ip,sym,dso 2>/dev/null | awk '
      function kind(f) {
        if (f ~ /^(copy_|_copy_|__copy_|raw_copy|rep_movs|copy_user|memcpy|__memcpy|memmove|__memmove|simple_copy_to_iter|skb_copy_datagram|__skb_datagram_iter|__check_object_size|check_heap_object)/) return "copying"
        if (f ~ /^(io_|__io_)/ && f !~ /^io_schedule/) return "io_uring"
        if (f ~ /^(ep_|__ep_|do_epoll|__x64_sys_epoll|__do_sys_epoll|epoll)/) return "epoll"
        if (f ~ /^(tcp|__tcp|bbr_|cubictcp|ip_|__ip|ipv4_|inet|__inet|sk_|__sk_|sock|__sock|skb_|__skb|kfree_skb|__kfree_skb|consume_skb|alloc_skb|__alloc_skb|napi|__napi|net_|__net|netif|__netif|process_backlog|loopback|dev_|__dev_|validate_xmit|nf_|__nf|raw_v4|raw_local|lock_sock|release_sock|__release_sock|__sys_sendto|__sys_recvfrom|__sys_sendmsg|__sys_recvmsg|security_sock|security_socket|apparmor_socket|neigh_|eth_|do_softirq|__do_softirq|handle_softirqs|irq_exit|bpf_skops|__cgroup_bpf)/) return "TCP/IP"
        if (f ~ /^(entry_|do_syscall|syscall_|__x64_sys_|__do_sys_|__se_sys_|x64_sys_call|exit_to_user|arch_exit_to_user|fpregs_|switch_fpu|restore_fpregs|fdget|__fdget|__fget|fget|fput|__fput|rseq_|__rseq|irqentry_|ksys_|vfs_read|vfs_write|rw_verify_area)/) return "syscall entry/exit, fd lookup"
        if (f ~ /(schedule|sched_|_sched|pick_next|pick_task|enqueue_|dequeue_|try_to_wake_up|ttwu|wake_up|update_curr|update_load|finish_task_switch|__switch_to|switch_mm|psi_|set_next_entity|put_prev|select_task_rq|check_preempt|resched|prepare_to_wait|autoremove_wake|finish_wait|hrtimer|native_sched_clock|reweight|cpuacct|account_)/) return "scheduler"
        return "other kernel"
      }
      function flush(  j) {
        if (nf == 0) return
        if (!kernel[1]) print "user\t" sym[1]
        else {
          for (j = 1; j <= nf && kernel[j] && sym[j] ~ /^(_raw_|__raw_|queued_|native_queued|native_irq|__pv_|pv_|preempt_|__rcu_read|rcu_read|__local_bh_enable_ip|local_bh_enable|__cond_resched|_cond_resched|mutex_|up_|down_|refcount_|srso_|__x86_|kmem_cache_|__kmem_cache|kmalloc|__kmalloc|kfree|__kfree|___slab|__slab|slab_|memset|__memset|page_frag|__page_frag|alloc_pages|__alloc_pages|get_page_from_freelist|put_page|__put_page|free_unref|__mod_memcg|mod_memcg|memcg_|__memcg|obj_cgroup|refill_obj_stock|consume_obj_stock|mod_timer|__mod_timer|lock_timer_base|read_tsc|ktime_get|list_|__list_|__virt_addr_valid|rb_|__rb_)/; j++) {}
          if (j > nf || !kernel[j]) j = 1
          print kind(sym[j]) "\t" sym[j]
        }
        nf = 0
      }
      /^\t/ { nf++; sym[nf] = $2; kernel[nf] = ($NF == "([kernel.kallsyms])"); next }
      { flush() }
      END { flush() }' | sort | uniq -c | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); print n "\t" $0 }' |
      sort -t "$(printf '\t')" -k1,1nr >"$work/profile.$i.tsv"
    # Requests done: h2load-rs's succeeded ones, or wrk's count.
    sed -n -e 's/^requests: .* \([0-9]*\) succeeded,.*/\1/p' -e 's/^ *\([0-9]*\) requests in .*/\1/p' "$work/profile.$i.out" >"$work/profile.$i.requests"
  done
  {
    printf '| kind |'
    for client in "${clients[@]}"; do printf ' %s %% of its CPU | %s µs/request |' "${client%%|*}" "${client%%|*}"; done
    printf '\n|---|'
    for client in "${clients[@]}"; do printf -- '---|---|'; done
    echo
    # The clients' function lines, each prefixed with its number and request count.
    for ((i = 1; i <= ${#clients[@]}; i++)); do
      awk -v i=$i -v n="$(cat "$work/profile.$i.requests")" '{ print i "\t" n "\t" $0 }' "$work/profile.$i.tsv"
    done | awk -F'\t' -v clients=${#clients[@]} -v us="$((profile_period_ns / 1000))" '
      { s[$1, $4] += $3; total[$1] += $3; n[$1] = $2 }
      END {
        split("user|syscall entry/exit, fd lookup|TCP/IP|copying|io_uring|epoll|scheduler|other kernel", kinds, "|")
        for (k = 1; k <= 9; k++) {
          printf "%s", (k < 9) ? "| " kinds[k] " |" : "| **all** |"
          for (i = 1; i <= clients; i++) {
            v = (k < 9) ? s[i, kinds[k]] : total[i]
            printf " %.1f | %.2f |", total[i] ? v * 100 / total[i] : 0, n[i] ? v * us / n[i] : 0
          }
          printf "\n"
        } }'
    echo
    i=0
    for client in "${clients[@]}"; do
      i=$((i + 1)) name=${client%%|*}
      [ -s "$work/profile.$i.requests" ] || { printf '> %s: no request done (%s).\n' "$name" "$(tail -n 1 "$work/profile.$i.out")"; continue; }
      printf '> %s, samples of the heaviest kernel functions (generic helpers counted in their callers): ' "$name"
      awk -F'\t' '$2 != "user" && n < 10 { printf "%s%s %s (%s)", sep, $3, $1, $2; sep = ", "; n++ }' "$work/profile.$i.tsv"
      printf '; other kernel: '
      awk -F'\t' '$2 == "other kernel" && n < 6 { printf "%s%s %s", sep, $3, $1; sep = ", "; n++ }' "$work/profile.$i.tsv"
      printf '.\n'
    done
    printf '\n%s\n' "$profile_end"
  } >>"$work/report"
  sed -n "/^### Client profile/,\$p" "$work/report"
}

# Replaces the section between markers $3 and $4 of RESULTS.md with this run's; a file without
# one gets it before the memory section.
splice_section() {
  python3 - "$results" "$work/report" "$1" "$2" <<'PY'
import sys
path, report, begin, end = sys.argv[1], open(sys.argv[2]).read().strip("\n"), sys.argv[3], sys.argv[4]
text = open(path).read()
if begin in text and end in text:
    text = text[: text.index(begin)] + report + text[text.index(end) + len(end) :]
elif "\n### Memory" in text:
    at = text.index("\n### Memory")
    text = text[:at] + "\n" + report + "\n" + text[at:]
else:
    text = text.rstrip("\n") + "\n\n" + report + "\n"
open(path, "w").write(text)
PY
}

main() {
  install
  mkdir -p "$work"
  : >"$work/report"
  : >"$work/rounds.log"
  pids=()
  trap stop_servers EXIT
  start_servers
  if [ "$only" = pacing ]; then
    pacing
    splice_heading "### Pacing:" "$(measured_alone "pacing $rounds"): with other work on the machine, p99 shows its scheduling more than the timer. h2load-rs wakes each request on a per-thread timerfd, one waiting connection per send time; a baseline built before that (tokio's 1 ms timer wheel, every idle connection woken for each send) shows the millisecond floor, and at -c 1000 the cost of the idle herd."
    echo
    echo "updated the pacing section of $results"
    return
  fi
  if [ "$only" = tls ]; then
    tls_section
    splice_section "$tls_begin" "$tls_end"
    echo
    echo "updated the TLS-handshake section of $results"
    return
  fi
  if [ "$only" = grpc ]; then
    grpc_section
    splice_section "$grpc_begin" "$grpc_end"
    echo
    echo "updated the gRPC section of $results"
    return
  fi
  if [ "$only" = h3 ]; then
    h3_section
    splice_section "$h3_begin" "$h3_end"
    echo
    echo "updated the HTTP/3 section of $results"
    return
  fi
  if [ "$only" = ab ]; then
    ab_section
    splice_section "$ab_begin" "$ab_end"
    echo
    echo "updated the build-against-build section of $results"
    return
  fi
  if [ "$only" = io ] || [ "$only" = downloads ]; then
    "${only}_rows"
    echo
    echo "the rows are in $work/report (RESULTS.md is left as it is)"
    return
  fi
  if [ "$only" = profile ]; then
    profile
    splice_section "$profile_begin" "$profile_end"
    echo
    echo "updated the profile section of $results"
    return
  fi
  if [ "$only" = memory ]; then
    memory "http://127.0.0.1:$h2c_port"
    splice_heading "### Memory" "$(measured_alone memory)."
    echo
    echo "updated the memory section of $results"
    return
  fi
  local h2c="http://127.0.0.1:$h2c_port"

  io_rows
  tcp_download_rows
  profile
  h3_section
  tls_section
  grpc_section

  memory "$h2c"
  pacing

  # A build-against-build section (`ab`) is measured on its own occasion: kept as it is.
  local kept=""
  [ ! -f "$results" ] || kept=$(awk -v b="$ab_begin" -v e="$ab_end" 'index($0, b) { on = 1 } on { print } index($0, e) { on = 0 }' "$results")
  {
    echo "# h2load-rs against its peers"
    echo
    echo "Generated by \`benches/compare.sh $rounds\` on $(date -u '+%Y-%m-%d %H:%M UTC'); do not edit by hand."
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r)."
    echo "Servers pinned to CPU $server_cpu (nginx 1 worker, nghttpd 1 thread, Caddy, the built-in target"
    echo "1 thread, grpc-go GOMAXPROCS=1), clients to CPU $client_cpu; $rounds interleaved rounds per row, medians shown."
    echo "Ratios: >= 1.0 means h2load-rs is at least as"
    echo "good (throughput ours/peer, CPU per request peer/ours, peak RSS peer/ours). Server CPU % is"
    echo "the server's share of its core during the run: near 100 % the server, not the client, sets"
    echo "the throughput; server CPU µs/request shows what each client's traffic costs the server."
    cat "$work/report"
    [ -z "$kept" ] || printf '\n%s\n' "$kept"
  } >"$results"
  echo
  echo "wrote $results"
}

# One 1 GiB download over h2c (nghttpd) and over HTTP/1.1 (nginx): what one connection carries.
tcp_download_rows() {
  local h2c="http://127.0.0.1:$h2c_port" h1="http://127.0.0.1:$h1_port" gib=$((1 << 30))
  server_pids=$nghttpd_pid
  row "one 1 GiB download over h2c (nghttpd)" "bytes:$gib" \
    "h2load-rs|$ours -n 1 $h2c/1g" \
    "h2load|h2load -n 1 $h2c/1g" \
    "curl|curl -s -o /dev/null -w %{speed_download} --http2-prior-knowledge $h2c/1g"
  server_pids=$nginx_pids
  row "one 1 GiB download over HTTP/1.1 (nginx)" "bytes:$gib" \
    "h2load-rs|$ours --h1 -n 1 $h1/1g" \
    "h2load|h2load --h1 -n 1 $h1/1g" \
    "curl|curl -s -o /dev/null -w %{speed_download} $h1/1g"
}

# h2 -c 10 -m 10 /ping for $h3_seconds s on the built-in TLS target (one thread), named $1: the
# server is saturated, so its CPU per request shows what each client's requests cost it.
target_h2_row() {
  local ca="$root/certs/ca.crt" target="https://127.0.0.1:$tls_target_port" d=$h3_seconds
  server_pids=$tls_target_pid
  row "$1" requests \
    "h2load-rs|$ours --cacert $ca -c 10 -m 10 -D ${d}s $target/ping" \
    "h2load|h2load -c 10 -m 10 -D $d $target/ping" \
    "oha|$oha --no-tui --http2 --cacert $ca -c 10 -p 10 -z ${d}s $target/ping"
}

# The rows where one connection's throughput, or what our requests cost the server, fell short
# of h2load's: the two TCP downloads and h2 on the built-in TLS target.
downloads_rows() {
  tcp_download_rows
  target_h2_row "h2, -c 10 -m 10, built-in target (TLS) /ping, $h3_seconds s"
}

# The request rows of h2c and HTTP/1.1 against one-core nghttpd and nginx, each with the
# --io uring variant of h2load-rs (issue 16's goal: throughput >= 1.0 and client CPU per request
# <= 0.5x of the row's first peer), and with --io-sqpoll in the h1 -c 100 row. The SQPOLL thread
# is a thread of the client: wait4's rusage counts it (and io-wq's workers), so the client CPU
# column does too. Since Linux 6.x it inherits the client's CPU affinity (older kernels let it run
# on any core, the server's too: the server core column would show it), so pinned here it shares
# CPU $client_cpu with the runner thread.
io_rows() {
  local h2c="http://127.0.0.1:$h2c_port" h1="http://127.0.0.1:$h1_port"
  server_pids=$nghttpd_pid
  request_row "h2c, -c 10 -m 100, nghttpd /ping, 1M requests" "-c 10 -m 100 -n 1000000 $h2c/ping" "" \
    "h2load|h2load -c 10 -m 100 -n 1000000 $h2c/ping" \
    "oha|$oha --no-tui --http2 -c 10 -p 100 -n 1000000 $h2c/ping"
  request_row "h2c, -c 1000 -m 1, nghttpd /ping, 100k requests" "-c 1000 -n 100000 $h2c/ping" "" \
    "h2load|h2load -c 1000 -n 100000 $h2c/ping"
  server_pids=$nginx_pids
  request_row "HTTP/1.1 keep-alive, -c 100, nginx /ping" "--h1 -c 100 -n 300000 $h1/ping" sqpoll \
    "wrk|wrk -t1 -c100 -d3s $h1/ping" \
    "oha|$oha --no-tui -c 100 -n 300000 $h1/ping" \
    "h2load|h2load --h1 -c 100 -n 300000 $h1/ping"
  request_row "HTTP/1.1 pipelined, -c 100 -m 16, nginx /ping, 1M requests" "--h1 -c 100 -m 16 -n 1000000 $h1/ping" "" \
    "h2load|h2load --h1 -c 100 -m 16 -n 1000000 $h1/ping"
}

# One request row: h2load-rs with $2, its --io uring variant (and --io uring --io-sqpoll when $3 is
# "sqpoll"), then the peers given; under `ab`, h2load-rs and the BASELINE build alone (the
# baseline's line then carries the ratios: throughput ours/baseline, CPU and RSS baseline/ours).
request_row() {
  local name=$1 args=$2 sqpoll=$3
  shift 3
  local entries=("h2load-rs|$ours $args")
  if [ "$only" = ab ]; then
    entries+=("$(baseline_name)|$BASELINE $args")
  else
    entries+=("h2load-rs --io uring|$ours --io uring $args")
    [ -z "$sqpoll" ] || entries+=("h2load-rs --io uring --io-sqpoll|$ours --io uring --io-sqpoll $args")
    entries+=("$@")
  fi
  row "$name" requests "${entries[@]}"
}

# How the BASELINE build is named in a table: "baseline (FILE NAME)" (not starting with
# "h2load-rs", so that row() treats it as a peer and our build as the first entry).
baseline_name() {
  printf 'baseline (%s)' "$(basename "$BASELINE")"
}

# The build-against-build section (`ab`): the request rows of h2load-rs beside BASELINE, between
# markers so that a full run keeps it and `ab` replaces it alone.
ab_section() {
  [ -n "${BASELINE:-}" ] || {
    echo "compare.sh ab: set BASELINE=/path/to/h2load-rs (the build to compare with)" >&2
    exit 2
  }
  {
    printf '\n%s\n\n### This build against %s\n\n' "$ab_begin" "$(baseline_name)"
    echo "$(measured_alone "ab $rounds"). Both builds on CPU $client_cpu, the servers on CPU $server_cpu,"
    echo "$rounds interleaved rounds per row (A B A B ...), medians; the baseline's line carries the ratios"
    echo "(throughput ours/baseline, CPU per request and peak RSS baseline/ours: >= 1.0 means this build is"
    echo "at least as good). BASELINE: $BASELINE ($("$BASELINE" --version 2>/dev/null | head -1))."
  } >>"$work/report"
  io_rows
  printf '\n%s\n' "$ab_end" >>"$work/report"
}

# Peak RSS for 1M and 10M requests (same -c), the latter also without the per-second timeline
# (one interval), RSS per waiting connection at -c 16000 on each I/O backend, and a 10 MB request
# body sent by 40 connections.
memory() {
  local h2c=$1
  local small large flat
  server_pids=$nghttpd_pid
  small=$(measure h2load-rs requests "$ours" -c 10 -m 100 -n 1000000 "$h2c/ping" | awk '{ print $3 }')
  large=$(measure h2load-rs requests "$ours" -c 10 -m 100 -n 10000000 "$h2c/ping" | awk '{ print $3 }')
  flat=$(measure h2load-rs requests "$ours" -c 10 -m 100 -n 10000000 --interval 1h "$h2c/ping" | awk '{ print $3 }')
  local waiting_epoll waiting_uring
  waiting_epoll=$(per_waiting_connection epoll)
  waiting_uring=$(per_waiting_connection uring)
  head -c 10000000 /dev/zero >"$work/body-10m"
  local body
  body=$(measure h2load-rs requests "$ours" --h1 -c 40 -n 40 -d "$work/body-10m" "http://127.0.0.1:$target_port/echo" | awk '{ print $3 }')
  {
    printf '\n### Memory\n\n| measurement | value |\n|---|---|\n'
    printf '| peak RSS, h2c -c 10 -m 100 -n 1,000,000 | %d KB |\n' "$small"
    printf '| peak RSS, h2c -c 10 -m 100 -n 10,000,000 | %d KB |\n' "$large"
    printf '| peak RSS, the same 10,000,000 with --interval 1h (no per-second timeline) | %d KB |\n' "$flat"
    awk -v a="$small" -v b="$flat" 'BEGIN { growth = (b - a) * 100 / a; verdict = growth < 10 ? "the recorder does not grow with -n" : "the recorder grows with -n: needs work"; printf "| 10M (one interval) vs 1M requests | %+.1f%% (%s) |\n", growth, verdict }'
    awk -v b="$large" -v f="$flat" 'BEGIN { printf "| what the per-second timeline of the 10M run cost | %+d KB |\n", b - f }'
    printf '%s\n%s\n' "$waiting_epoll" "$waiting_uring"
    printf '| peak RSS, -d 10 MB body, -c 40 (one shared copy of the body) | %d KB |\n' "$body"
  } >>"$work/report"
  tail -n 10 "$work/report"
}

# The memory table's row for RSS per waiting connection under --io $1: (peak RSS at -c 16000 -
# peak RSS at -c 1) / 16000, HTTP/1.1 to the built-in target's 3 s handler.
per_waiting_connection() {
  local io=$1 base idle
  server_pids=$target_pid
  base=$(measure h2load-rs requests "$ours" --io "$io" --h1 -c 1 -n 1 "http://127.0.0.1:$target_port/delay/3000" | awk '{ print $3 }')
  idle=$(measure h2load-rs requests "$ours" --io "$io" --h1 -c 16000 -n 16000 "http://127.0.0.1:$target_port/delay/3000" | awk '{ print $3 }')
  awk -v a="$base" -v b="$idle" -v io="$io" 'BEGIN { per = (b - a) / 16000; printf "| RSS per waiting connection, --io %s, (RSS at -c 16000 - RSS at -c 1) / 16000 (HTTP/1.1, 3 s handler) | %.2f KB (%s) |", io, per, per <= 4 ? "within the 4 KB goal" : "over the 4 KB goal: needs work" }'
}

main
