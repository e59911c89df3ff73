#!/usr/bin/env bash
# Installs what the test suite needs besides Rust: the peer tools the cross-checks compare against.
# Idempotent: installs only what is missing. Needs root (CI runs as root) or sudo.
set -euo pipefail

need=()
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "tests/setup.sh: installing ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
