#!/usr/bin/env bash
# The test command: installs what the tests need (tests/setup.sh), starts the real-target test bed
# (tests/testbed.sh), runs each bench once as a smoke test, then every test suite, then the
# real-target and hostile suites again under `--io uring`, and stops the test bed again. Every
# step runs even when an earlier one failed, so one run shows every failure; the last line sums
# up the suites and tests, and the exit status is non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
tests/setup.sh || exit 1
cargo build --locked --all-targets || exit 1
trap 'tests/testbed.sh stop' EXIT
H2LOAD_RS_TESTBED=$(tests/testbed.sh start) || exit 1
export H2LOAD_RS_TESTBED

log=$(mktemp)
trap 'tests/testbed.sh stop; rm -f "$log"' EXIT
failed_steps=0
# Runs one cargo test command, echoing its output and keeping a copy to count its results.
step() {
  if ! "$@" 2>&1 | tee -a "$log"; then
    failed_steps=$((failed_steps + 1))
    echo "tests/run.sh: FAILED: $*" | tee -a "$log"
  fi
}
# The benches once in test mode (criterion runs each a single time), then every test suite; with
# --no-fail-fast a failing test binary does not keep the others from running.
step cargo test --locked --bench engines
step cargo test --locked --no-fail-fast --lib --bins --tests

# The same suites again with every h2load-rs the tests start on io_uring (H2LOAD_RS_IO sets --io;
# a test that gives --io keeps it): the real targets of the test bed, the hostile servers, and
# the built-in target's suites that exercise connecting, churn, faults, byte counts, pacing
# (--rate, --stages), 16,000 connections, signals and exit statuses. Both backends must give the
# same counts, bytes and error kinds (issue 16). HTTP/3 is left out: QUIC runs on epoll either
# way. A kernel that refuses io_uring fails this step once, with its reason, not every test.
uring_suites() {
  local refused
  # pipefail: the run's status, with the last line of its stderr (the reason).
  if ! refused=$(cargo run --locked -q -- --io uring -n 1 -q 2>&1 >/dev/null | tail -n 1); then
    echo "tests/run.sh: io_uring suites not run: $refused"
    return 1
  fi
  H2LOAD_RS_IO=uring cargo test --locked --no-fail-fast --test it -- \
    testbed:: hostile:: peers:: transport:: lifecycle:: checks:: urls:: bytes:: faults:: \
    load:: scale:: rate:: stages:: bad_input:: cli:: grpc::
}
step uring_suites

# Each test binary prints one "test result: ok. 12 passed; 0 failed; 1 ignored; ..." line.
summary=$(awk '
  /^test result: / {
    if ($3 == "ok.") suites_ok++; else suites_failed++
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^passed/) passed += $(i - 1)
      if ($i ~ /^failed/) failed += $(i - 1)
      if ($i ~ /^ignored/) ignored += $(i - 1)
    }
  }
  END { printf "%d %d %d %d %d", suites_ok, suites_failed, passed, failed, ignored }
' "$log")
read -r suites_ok suites_failed passed failed ignored <<<"$summary"
echo
echo "tests/run.sh: suites: $suites_ok passed, $suites_failed failed;" \
  "tests: $passed passed, $failed failed, $ignored ignored;" \
  "steps that failed: $failed_steps of 3"
[ "$failed_steps" -eq 0 ] && [ "$suites_failed" -eq 0 ]
