#!/usr/bin/env bash
# The test command: installs what the tests need (tests/setup.sh), starts the real-target test bed
# (tests/testbed.sh), runs every test once (and each bench once, as a smoke test), and stops the
# test bed again.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/setup.sh
cargo build --locked --all-targets
trap 'tests/testbed.sh stop' EXIT
H2LOAD_RS_TESTBED=$(tests/testbed.sh start)
export H2LOAD_RS_TESTBED
# The benches once in test mode (criterion runs each a single time), then every test suite.
cargo test --locked --bench engines
cargo test --locked --lib --bins --tests
