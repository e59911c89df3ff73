#!/usr/bin/env bash
# The test command: installs what the tests need (tests/setup.sh), starts the real-target test bed
# (tests/testbed.sh), runs every test once, and stops the test bed again.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/setup.sh
cargo build --locked --all-targets
trap 'tests/testbed.sh stop' EXIT
H2LOAD_RS_TESTBED=$(tests/testbed.sh start)
export H2LOAD_RS_TESTBED
cargo test --locked --all-targets
