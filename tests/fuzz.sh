#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (FUZZ_SECONDS each, default 40); fails on a crash.
# Needs the nightly toolchain (rustup) and cargo-fuzz, which it installs from crates.io if missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${FUZZ_SECONDS:-40}
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
for target in $(cargo +nightly fuzz list); do
  echo "fuzzing $target for ${seconds}s"
  cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=4096 2>&1 | tail -n 3
done
echo "fuzzing: every target ran ${seconds}s without a crash"
