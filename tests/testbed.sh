#!/usr/bin/env bash
# The real-target test bed: starts Gin, nginx, nghttpd, nghttpx, Caddy, Apache httpd, ngtcp2's
# HTTP/3 example server and two gRPC servers (grpc-go and Python's grpcio) on loopback
# ports with the certificates in certs/, and Prometheus, or stops them. Install them first with
# tests/setup.sh.
#
#   tests/testbed.sh start   # prints the state directory; the tests read H2LOAD_RS_TESTBED=<it>
#   tests/testbed.sh stop
#
# Ports (all on 127.0.0.1):
#   19080 Gin   HTTP/1.1 + h2c (prior knowledge and Upgrade)   19443 Gin   TLS: h2 + http/1.1
#   19180 nginx HTTP/1.1                                       19543 nginx TLS: h2 + http/1.1
#                                                              19544 nginx TLS: http/1.1 only
#                                                              19545 nginx TLS: self-signed certificate
#                                                              19546 nginx TLS: client certificate required
#   19280 nghttpd h2c (prior knowledge only)                   19643 nghttpd TLS: h2
#   19743 nghttpx TLS frontend (h2 + http/1.1) → nginx 19180   19843 Caddy TLS: h2 + http/1.1, h3 on UDP
#   19380 Apache HTTP/1.1 + h2c (prior knowledge and Upgrade)  19943 Apache TLS: h2 + http/1.1
#                                                              19844 gtlsserver (ngtcp2) UDP: h3 only
# Every server serves /ping ("pong") and /bytes/1000 (1000 bytes).
#   19888 tinyproxy: HTTP proxy (CONNECT to any port), for --proxy
#   19490 Prometheus (HTTP API), scraping 127.0.0.1:19464/metrics every second: the port the live
#         metrics test gives --metrics-listen (nothing listens there between tests)
#   19085 gRPC grpc-go h2c                                     19445 gRPC grpc-go TLS: h2
#   19086 gRPC grpc-go h2c, at most 8 concurrent streams
#   19087 gRPC Python grpcio h2c                               19447 gRPC Python grpcio TLS: h2
# The gRPC servers (tests/grpc-target/) serve h2loadrs.probe.Probe (proto/probe.proto),
# helloworld.Greeter and server reflection.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/target/testbed"
certs="$root/certs"
ports=(19080 19443 19180 19543 19544 19545 19546 19280 19643 19743 19843 19380 19943 19490 19888
  19085 19086 19445 19087 19447)
# UDP ports (HTTP/3): Caddy's QUIC side of 19843 and gtlsserver.
udp_ports=(19843 19844)

stop() {
  [ -d "$state/pids" ] || return 0
  for pidfile in "$state"/pids/*; do
    [ -e "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

wait_for_ports() {
  local deadline=$((SECONDS + 60))
  for port in "${ports[@]}"; do
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
      if [ $SECONDS -ge $deadline ]; then
        echo "testbed: nothing listens on 127.0.0.1:$port after 60 s; logs in $state/logs:" >&2
        tail -n 5 "$state"/logs/* >&2 || true
        exit 1
      fi
      sleep 0.1
    done
  done
  for port in "${udp_ports[@]}"; do
    until udp_bound "$port"; do
      if [ $SECONDS -ge $deadline ]; then
        echo "testbed: nothing is bound to UDP 127.0.0.1:$port after 60 s; logs in $state/logs:" >&2
        tail -n 5 "$state"/logs/* >&2 || true
        exit 1
      fi
      sleep 0.1
    done
  done
}

# Whether a UDP socket is bound to 127.0.0.1:PORT (QUIC has nothing to connect to before a
# handshake, so the kernel's socket table is asked).
udp_bound() {
  grep -q "^ *[0-9]*: 0100007F:$(printf %04X "$1") " /proc/net/udp
}

# Runs a server in the background, remembering its pid.
launch() {
  local name=$1
  shift
  "$@" >"$state/logs/$name.log" 2>&1 &
  echo $! >"$state/pids/$name"
}

start() {
  stop
  mkdir -p "$state/www/bytes" "$state/logs" "$state/pids" "$state/nginx-temp" "$state/caddy" \
    "$state/apache"
  printf pong >"$state/www/ping"
  head -c 1000 /dev/zero | tr '\0' x >"$state/www/bytes/1000"

  (cd "$root/tests/gin-target" && go build -o "$state/gin-target" .)
  launch gin "$state/gin-target" -h2c 127.0.0.1:19080 -tls 127.0.0.1:19443 \
    -cert "$certs/server.crt" -key "$certs/server.key"

  # The gRPC servers: grpc-go (built like Gin) and grpcio from the venv tests/setup.sh makes.
  (cd "$root/tests/grpc-target" && go build -o "$state/grpc-target" .)
  launch grpc-go "$state/grpc-target" -h2c 127.0.0.1:19085 -h2c-capped 127.0.0.1:19086 \
    -tls 127.0.0.1:19445 -cert "$certs/server.crt" -key "$certs/server.key"
  launch grpc-py "${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs/grpc-py/bin/python" \
    "$root/tests/grpc-target/server.py" --h2c 127.0.0.1:19087 --tls 127.0.0.1:19447 \
    --cert "$certs/server.crt" --key "$certs/server.key"

  cat >"$state/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $state/nginx.pid;
error_log $state/logs/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  default_type application/octet-stream;
  keepalive_requests 1000000;
  client_body_temp_path $state/nginx-temp/body;
  proxy_temp_path $state/nginx-temp/proxy;
  fastcgi_temp_path $state/nginx-temp/fastcgi;
  uwsgi_temp_path $state/nginx-temp/uwsgi;
  scgi_temp_path $state/nginx-temp/scgi;
  root $state/www;
  ssl_certificate $certs/server.crt;
  ssl_certificate_key $certs/server.key;
  server { listen 127.0.0.1:19180; }
  server { listen 127.0.0.1:19543 ssl http2; }
  server { listen 127.0.0.1:19544 ssl; }
  server {
    listen 127.0.0.1:19545 ssl http2;
    ssl_certificate $certs/selfsigned.crt;
    ssl_certificate_key $certs/selfsigned.key;
  }
  server {
    listen 127.0.0.1:19546 ssl http2;
    ssl_client_certificate $certs/ca.crt;
    ssl_verify_client on;
  }
}
CONF
  launch nginx nginx -c "$state/nginx.conf"

  launch nghttpd-h2c nghttpd --no-tls -a 127.0.0.1 -d "$state/www" 19280
  launch nghttpd-tls nghttpd -a 127.0.0.1 -d "$state/www" 19643 "$certs/server.key" "$certs/server.crt"

  launch nghttpx nghttpx --conf=/dev/null --workers=1 --frontend='127.0.0.1,19743' \
    --backend='127.0.0.1,19180' --errorlog-file="$state/logs/nghttpx-error.log" \
    "$certs/server.key" "$certs/server.crt"

  cat >"$state/Caddyfile" <<CONF
{
  admin off
  storage file_system $state/caddy
  servers {
    protocols h1 h2 h3
  }
}
# Both names: a request whose SNI or authority matches no site gets an empty 200 from Caddy.
https://localhost:19843, https://127.0.0.1:19843 {
  bind 127.0.0.1
  tls $certs/server.crt $certs/server.key
  root * $state/www
  file_server
}
CONF
  XDG_CONFIG_HOME="$state/caddy" XDG_DATA_HOME="$state/caddy" \
    launch caddy caddy run --config "$state/Caddyfile" --adapter caddyfile

  # ngtcp2's example server (GnuTLS build): HTTP/3 only, files from the same www directory.
  launch gtlsserver gtlsserver -q -d "$state/www" 127.0.0.1 19844 "$certs/server.key" "$certs/server.crt"

  # Apache httpd 2.4 (mod_http2, mpm_event) in the foreground, its whole configuration here: no
  # Debian site files, no apache2ctl. Started as root it serves as www-data (it refuses to serve
  # as root); the certificates are read before it drops privileges.
  local modules=/usr/lib/apache2/modules user=""
  if [ "$(id -u)" -eq 0 ]; then user=$'User www-data\nGroup www-data'; fi
  cat >"$state/apache.conf" <<CONF
ServerRoot $state/apache
ServerName localhost
DefaultRuntimeDir $state/apache
PidFile $state/apache/httpd.pid
Mutex file:$state/apache default
ErrorLog $state/logs/apache-error.log
LogLevel warn
$user
LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule socache_shmcb_module $modules/mod_socache_shmcb.so
LoadModule ssl_module $modules/mod_ssl.so
LoadModule http2_module $modules/mod_http2.so
StartServers 1
ServerLimit 2
ThreadsPerChild 25
MaxRequestWorkers 50
DocumentRoot $state/www
<Directory $state/www>
  Require all granted
</Directory>
SSLSessionCache shmcb:$state/apache/ssl_cache(512000)
Listen 127.0.0.1:19380
Listen 127.0.0.1:19943
<VirtualHost 127.0.0.1:19380>
  Protocols h2c http/1.1
  H2Direct on
  H2Upgrade on
</VirtualHost>
<VirtualHost 127.0.0.1:19943>
  Protocols h2 http/1.1
  SSLEngine on
  SSLCertificateFile $certs/server.crt
  SSLCertificateKeyFile $certs/server.key
</VirtualHost>
CONF
  launch apache /usr/sbin/apache2 -f "$state/apache.conf" -DFOREGROUND

  # tinyproxy for --proxy: CONNECT to every port (no ConnectPort line: Debian's own configuration
  # allows only 443 and 563), loopback clients only, in the foreground (-d), logging to stderr, so
  # its log and pid file are launch's, in the state directory. As root it must be told whom to
  # run as.
  local proxy_user=""
  if [ "$(id -u)" -eq 0 ]; then proxy_user=$'User nobody\nGroup nogroup'; fi
  cat >"$state/tinyproxy.conf" <<CONF
$proxy_user
Port 19888
Listen 127.0.0.1
Timeout 60
MaxClients 200
Allow 127.0.0.1
LogLevel Warning
DisableViaHeader Yes
CONF
  launch tinyproxy tinyproxy -d -c "$state/tinyproxy.conf"

  # Prometheus with a fresh database each time, so no series of an earlier bed is seen.
  rm -rf "$state/prometheus"
  mkdir -p "$state/prometheus"
  cat >"$state/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: h2load-rs
    static_configs:
      - targets: ['127.0.0.1:19464']
CONF
  launch prometheus prometheus --config.file="$state/prometheus.yml" \
    --storage.tsdb.path="$state/prometheus" --web.listen-address=127.0.0.1:19490

  wait_for_ports
  echo "$state"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
