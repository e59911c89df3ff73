#!/usr/bin/env bash
# Peer comparison: h2load-rs against h2load, wrk, oha and curl, measured in the same run.
#
#   benches/compare.sh [ROUNDS]      (default 3 rounds; writes benches/RESULTS.md)
#   benches/compare.sh pacing [ROUNDS]   (only the --rate pacing rows; replaces that section of
#                                         RESULTS.md; PACING_BASELINE=/path/to/h2load-rs adds the
#                                         same rows measured with another build, e.g. main's)
#
# Installs what it needs (Debian packages, oha with cargo), starts nginx (1 worker) and nghttpd
# (1 thread) pinned to CPU 0, pins every client to CPU 1, runs each row's tools interleaved
# (A B C A B C ...) and reports medians. Ratios are arranged so that >= 1.0 means h2load-rs is at
# least as good: throughput ours/peer, CPU per request peer/ours, peak RSS peer/ours.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
only=""
if [ "${1:-}" = pacing ]; then
  only=pacing
  shift
fi
rounds=${1:-3}
work="$root/target/compare"
results="$root/benches/RESULTS.md"
server_cpu=0
client_cpu=1
# COMPARE_PORT=P moves the servers to P, P+100 and P+200 (tests/testbed.sh uses the defaults too).
h1_port=${COMPARE_PORT:-19180}
h2c_port=$((h1_port + 100))
target_port=$((h1_port + 200))

install() {
  local need=()
  command -v h2load >/dev/null || need+=(nghttp2-client)
  command -v nghttpd >/dev/null || need+=(nghttp2-server)
  command -v nginx >/dev/null || need+=(nginx-light)
  command -v wrk >/dev/null || need+=(wrk)
  command -v ab >/dev/null || need+=(apache2-utils)
  command -v curl >/dev/null || need+=(curl)
  [ -x /usr/bin/time ] || need+=(time)
  if [ ${#need[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  command -v oha >/dev/null || [ -x "$HOME/.cargo/bin/oha" ] || cargo install --locked oha >/dev/null
  oha=$(command -v oha || echo "$HOME/.cargo/bin/oha")
  (cd "$root" && cargo build --release --locked -q)
  ours="$root/target/release/h2load-rs"
}

start_servers() {
  mkdir -p "$work/www" "$work/temp"
  printf pong >"$work/www/ping"
  [ -f "$work/www/1g" ] || truncate -s 1G "$work/www/1g"
  # Into the page cache first: otherwise the first download of a round (always h2load-rs's) pays
  # for filling it (10x the server's CPU, seen as 0.11 of h2load's throughput in a 1-round run).
  cat "$work/www/1g" >/dev/null
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
  for port in $h1_port $h2c_port $target_port; do
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done
  done
  nginx_pids="$nginx_master $(pgrep -P "$nginx_master" | tr '\n' ' ')"
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

# Runs one measurement: TOOL KIND CMD...; KIND is "requests" or "bytes:N".
# Prints "rate cpu_us_per_request rss_kb server_cpu_percent server_us_per_request"
# (rate in requests/s, or bytes/s for downloads).
measure() {
  local tool=$1 kind=$2
  shift 2
  local out="$work/out" timing="$work/time"
  local ticks_before started ticks_after ended
  ticks_before=$(server_ticks)
  started=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$timing" taskset -c $client_cpu "$@" >"$out" 2>&1
  ended=$(date +%s.%N)
  ticks_after=$(server_ticks)
  local user sys rss
  read -r user sys rss <"$timing"
  local rate done_requests
  case "$tool" in
    h2load-rs | h2load)
      local elapsed
      elapsed=$(seconds "$(sed -n 's/^finished in \([^,]*\),.*/\1/p' "$out")")
      done_requests=$(sed -n 's/^requests: .* \([0-9]*\) done,.*/\1/p' "$out")
      if [[ $kind == bytes:* ]]; then
        rate=$(awk -v b="${kind#bytes:}" -v t="$elapsed" 'BEGIN { print b / t }')
      else
        rate=$(awk -v n="$done_requests" -v t="$elapsed" 'BEGIN { print n / t }')
      fi
      ;;
    wrk)
      rate=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
      done_requests=$(awk '/requests in/ { print $1 }' "$out")
      ;;
    oha)
      rate=$(awk '/Requests\/sec:/ { print $2 }' "$out")
      done_requests=$(awk '/\[200\]/ { print $2 }' "$out")
      ;;
    curl)
      rate=$(cat "$out")
      done_requests=1
      ;;
  esac
  local hz
  hz=$(getconf CLK_TCK)
  awk -v r="$rate" -v u="$user" -v s="$sys" -v n="$done_requests" -v m="$rss" \
    -v t="$((ticks_after - ticks_before))" -v hz="$hz" -v w="$(awk -v a="$started" -v b="$ended" 'BEGIN { print b - a }')" \
    'BEGIN { n = (n > 0 ? n : 1); printf "%.0f %.3f %d %.0f %.3f\n", r, (u + s) * 1e6 / n, m, t / hz * 100 / w, t / hz * 1e6 / n }'
}

# A note for a peer whose median out-ran h2load-rs: was the server, not the client, the limit?
explain() {
  awk -v t="$1" -v r="$2" -v s="$3" -v c="$4" -v or="$5" -v os="$6" -v oc="$7" -v peer_low="$8" -v ours_high="$9" \
    -v peer_cost="${10}" -v ours_cost="${11}" 'BEGIN {
    if (or >= r) exit
    if (s >= 95 && os >= 95 && ours_high >= peer_low)
      printf "> vs %s, throughput %.2f: the server was saturated in both (%d%% and %d%% of its core), so it set the rate; it spent %.2f µs per request under h2load-rs and %.2f under %s, and the rates of the rounds overlap (ranges above): variation at the server'"'"'s limit, not a slower client. h2load-rs used %.2fx the client CPU per request.\n", t, or / r, os, s, ours_cost, peer_cost, t, oc / c
    else
      printf "> vs %s, throughput %.2f: h2load-rs is slower here (server at %d%% / %d%%, rounds do not overlap): needs work.\n", t, or / r, os, s
  }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# A row: NAME KIND then "tool|command" entries; the first tool is h2load-rs.
row() {
  local name=$1 kind=$2
  shift 2
  local entries=("$@")
  rm -f "$work"/row.* "$work/notes"
  for ((round = 1; round <= rounds; round++)); do
    for entry in "${entries[@]}"; do
      local tool=${entry%%|*} command=${entry#*|}
      # shellcheck disable=SC2086 # the command is a word list on purpose
      measure "$tool" "$kind" $command >>"$work/row.$tool"
    done
  done
  local unit="req/s, median (min–max)" cpu_unit="client CPU µs/request" server_unit="server CPU µs/request"
  [[ $kind == bytes:* ]] && unit="MB/s, median (min–max)" cpu_unit="client CPU µs for the download" server_unit="server CPU µs for the download"
  printf '\n### %s\n\n| tool | %s | %s | peak RSS KB | server CPU %% | %s | ratio throughput | ratio CPU | ratio RSS |\n|---|---|---|---|---|---|---|---|---|\n' \
    "$name" "$unit" "$cpu_unit" "$server_unit" >>"$work/report"
  local ours_rate ours_cpu ours_rss ours_server ours_max
  for entry in "${entries[@]}"; do
    local tool=${entry%%|*}
    local rate cpu rss server server_cost low high
    rate=$(awk '{ print $1 }' "$work/row.$tool" | median)
    low=$(awk '{ print $1 }' "$work/row.$tool" | sort -g | head -1)
    high=$(awk '{ print $1 }' "$work/row.$tool" | sort -g | tail -1)
    cpu=$(awk '{ print $2 }' "$work/row.$tool" | median)
    rss=$(awk '{ print $3 }' "$work/row.$tool" | median)
    server=$(awk '{ print $4 }' "$work/row.$tool" | median)
    server_cost=$(awk '{ print $5 }' "$work/row.$tool" | median)
    if [ "$tool" = h2load-rs ]; then
      ours_rate=$rate ours_cpu=$cpu ours_rss=$rss ours_server=$server ours_max=$high
    fi
    awk -v t="$tool" -v r="$rate" -v c="$cpu" -v m="$rss" -v k="$kind" -v sc="$server" -v sv="$server_cost" \
      -v lo="$low" -v hi="$high" -v or="$ours_rate" -v oc="$ours_cpu" -v om="$ours_rss" 'BEGIN {
      d = (k ~ /^bytes/) ? 1048576 : 1
      shown = sprintf("%.0f (%.0f–%.0f)", r / d, lo / d, hi / d)
      if (t == "h2load-rs")
        printf "| **%s** | %s | %.2f | %d | %d | %.2f | | | |\n", t, shown, c, m, sc, sv
      else
        printf "| %s | %s | %.2f | %d | %d | %.2f | %.2f | %.2f | %.2f |\n", t, shown, c, m, sc, sv, or / r, c / oc, m / om }' >>"$work/report"
    if [ "$tool" != h2load-rs ]; then
      explain "$tool" "$rate" "$server" "$cpu" "$ours_rate" "$ours_server" "$ours_cpu" "$low" "$ours_max" \
        "$server_cost" "$(awk '{ print $5 }' "$work/row.h2load-rs" | median)" >>"$work/notes"
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
  [ -n "${PACING_BASELINE:-}" ] && builds+=("baseline ($(basename "$PACING_BASELINE"))|$PACING_BASELINE")
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

# Replaces the pacing section of RESULTS.md (from its heading to the next one) with this run's.
splice_pacing() {
  python3 - "$results" "$work/report" "$rounds" <<'PY'
import re, sys, datetime
path, report, rounds = sys.argv[1], open(sys.argv[2]).read().strip("\n"), sys.argv[3]
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
load = open("/proc/loadavg").read().split()[0]
report += (f"\n\nMeasured by `benches/compare.sh pacing {rounds}` on {stamp} (this section only), load average"
           f" {load} at the end: with other work on the machine, p99 shows its scheduling more than the timer."
           " h2load-rs wakes each request on a per-thread timerfd, one waiting connection per send time;"
           " a baseline built before that (tokio's 1 ms timer wheel, every idle connection woken for each"
           " send) shows the millisecond floor, and at -c 1000 the cost of the idle herd.\n")
text = open(path).read()
pattern = re.compile(r"\n### Pacing:.*?(?=\n### |\Z)", re.S)
text = pattern.sub(lambda _: "\n" + report, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + report
open(path, "w").write(text)
PY
}

main() {
  install
  mkdir -p "$work"
  : >"$work/report"
  pids=()
  trap stop_servers EXIT
  start_servers
  if [ "$only" = pacing ]; then
    pacing
    splice_pacing
    echo
    echo "updated the pacing section of $results"
    return
  fi
  local h2c="http://127.0.0.1:$h2c_port" h1="http://127.0.0.1:$h1_port"
  local gib=$((1 << 30))

  server_pids=$nghttpd_pid
  row "h2c, -c 10 -m 100, nghttpd /ping, 1M requests" requests \
    "h2load-rs|$ours -c 10 -m 100 -n 1000000 $h2c/ping" \
    "h2load|h2load -c 10 -m 100 -n 1000000 $h2c/ping" \
    "oha|$oha --no-tui --http2 -c 10 -p 100 -n 1000000 $h2c/ping"
  row "h2c, -c 1000 -m 1, nghttpd /ping, 100k requests" requests \
    "h2load-rs|$ours -c 1000 -n 100000 $h2c/ping" \
    "h2load|h2load -c 1000 -n 100000 $h2c/ping"
  server_pids=$nginx_pids
  row "HTTP/1.1 keep-alive, -c 100, nginx /ping" requests \
    "h2load-rs|$ours --h1 -c 100 -n 300000 $h1/ping" \
    "wrk|wrk -t1 -c100 -d3s $h1/ping" \
    "oha|$oha --no-tui -c 100 -n 300000 $h1/ping" \
    "h2load|h2load --h1 -c 100 -n 300000 $h1/ping"
  row "HTTP/1.1 pipelined, -c 100 -m 16, nginx /ping, 1M requests" requests \
    "h2load-rs|$ours --h1 -c 100 -m 16 -n 1000000 $h1/ping" \
    "h2load|h2load --h1 -c 100 -m 16 -n 1000000 $h1/ping"
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

  server_pids=$nghttpd_pid
  memory "$h2c"
  pacing

  {
    echo "# h2load-rs against its peers"
    echo
    echo "Generated by \`benches/compare.sh $rounds\` on $(date -u '+%Y-%m-%d %H:%M UTC'); do not edit by hand."
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r)."
    echo "Servers pinned to CPU $server_cpu (nginx 1 worker, nghttpd 1 thread), clients to CPU $client_cpu;"
    echo "$rounds interleaved rounds per row, medians shown. Ratios: >= 1.0 means h2load-rs is at least as"
    echo "good (throughput ours/peer, CPU per request peer/ours, peak RSS peer/ours). Server CPU % is"
    echo "the server's share of its core during the run: near 100 % the server, not the client, sets"
    echo "the throughput; server CPU µs/request shows what each client's traffic costs the server."
    cat "$work/report"
  } >"$results"
  echo
  echo "wrote $results"
}

# Peak RSS for 1M and 10M requests (same -c), the latter also without the per-second timeline
# (one interval), RSS per connection at -c 16000, and a 10 MB request body sent by 40 connections.
memory() {
  local h2c=$1
  local small large flat
  small=$(measure h2load-rs requests "$ours" -c 10 -m 100 -n 1000000 "$h2c/ping" | awk '{ print $3 }')
  large=$(measure h2load-rs requests "$ours" -c 10 -m 100 -n 10000000 "$h2c/ping" | awk '{ print $3 }')
  flat=$(measure h2load-rs requests "$ours" -c 10 -m 100 -n 10000000 --interval 1h "$h2c/ping" | awk '{ print $3 }')
  local base idle
  base=$(measure h2load-rs requests "$ours" --h1 -c 1 -n 1 "http://127.0.0.1:$target_port/delay/3000" | awk '{ print $3 }')
  idle=$(measure h2load-rs requests "$ours" --h1 -c 16000 -n 16000 "http://127.0.0.1:$target_port/delay/3000" | awk '{ print $3 }')
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
    awk -v a="$base" -v b="$idle" 'BEGIN { per = (b - a) / 16000; printf "| RSS per waiting connection, (RSS at -c 16000 - RSS at -c 1) / 16000 (HTTP/1.1, 3 s handler) | %.2f KB (%s) |\n", per, per <= 4 ? "within the 4 KB goal" : "over the 4 KB goal: needs work" }'
    printf '| peak RSS, -d 10 MB body, -c 40 (one shared copy of the body) | %d KB |\n' "$body"
  } >>"$work/report"
  tail -n 10 "$work/report"
}

main
