#!/usr/bin/env bash
# Installs what the test suite needs besides Rust and Go: the peer tools the cross-checks compare
# against, the real servers of the test bed, and Chromium (the HTML report is checked in it). Idempotent: installs only what is missing.
# The Python gRPC server's venv goes into ${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs/, outside the checkout.
# Needs root (CI runs as root) or sudo. Services are never started by the install: tests start
# their own instances on loopback ports (tests/testbed.sh).
set -euo pipefail

need=()
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v nghttpd >/dev/null || need+=(nghttp2-server)
command -v nghttpx >/dev/null || need+=(nghttp2-proxy)
command -v nginx >/dev/null || need+=(nginx-light)
command -v caddy >/dev/null || need+=(caddy)
# ngtcp2's example HTTP/3 server (gtlsserver), a second real HTTP/3 peer besides Caddy.
command -v gtlsserver >/dev/null || need+=(ngtcp2-server)
# apache2 lives in /usr/sbin, which a user's PATH may lack; mod_http2 and mod_ssl come with it.
[ -x /usr/sbin/apache2 ] || need+=(apache2)
command -v curl >/dev/null || need+=(curl)
# script(1) gives a report a terminal (the 100-column test); Debian ships it in bsdutils.
command -v script >/dev/null || need+=(bsdutils)
command -v openssl >/dev/null || need+=(openssl)
command -v chromium >/dev/null || need+=(chromium)
# Prometheus and promtool: the live metrics (--metrics-listen) are scraped by the real thing.
command -v promtool >/dev/null || need+=(prometheus)
# tinyproxy: the real HTTP proxy --proxy tunnels through (CONNECT).
command -v tinyproxy >/dev/null || need+=(tinyproxy)
# Python 3 with venv, for the test bed's Python gRPC server (grpcio).
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)

cache=${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs
# The Python gRPC server's venv (tests/grpc-target/server.py), remade when its pinned
# requirements change. (ghz, which only benches/compare.sh runs, is installed by it.)
cached_tools() {
  local venv="$cache/grpc-py" reqs="$root/tests/grpc-target/requirements.txt"
  if ! cmp -s "$reqs" "$venv/requirements.txt"; then
    echo "tests/setup.sh: making the gRPC venv $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$reqs"
    cp "$reqs" "$venv/requirements.txt"
  fi
}
root=$(cd "$(dirname "$0")/.." && pwd)

if [ ${#need[@]} -eq 0 ]; then
  cached_tools
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "tests/setup.sh: installing ${need[*]}"
# Keep Debian's maintainer scripts from starting nginx/caddy/apache2 as system services.
policy=/usr/sbin/policy-rc.d
created_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  created_policy=1
fi
trap '[ -n "$created_policy" ] && $sudo rm -f "$policy"' EXIT
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The policy above keeps the services from starting; tinyproxy's package also enables its unit for
# the next boot, where it would hold port 8888: the test bed starts its own instance on 19888.
if [[ " ${need[*]} " == *" tinyproxy "* ]] && command -v systemctl >/dev/null; then
  $sudo systemctl disable --now tinyproxy >/dev/null 2>&1 || true
fi
cached_tools
