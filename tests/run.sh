#!/usr/bin/env bash
# The test command: installs what the tests need (tests/setup.sh), then runs every test once.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/setup.sh
cargo test --locked
