#!/usr/bin/env bash
# The end-to-end test of h2load-rs on a real Kubernetes cluster (issue 27), run by .ci/run:
# builds the image with configs/k8s/image.sh, brings a single-node cluster up with
# tests/k8s/cluster.sh, runs the built-in target as a pod, and then:
#   1. a Job of 3 shards of one counted load (`k8s-job`): the merged report has the planned total
#      exactly, its histogram holds the sum of the shards' counts, the shards' start skew is
#      reported and within BOUND_SKEW_MS, and `merge --fail-if` exits 3 on a breached threshold
#      and 0 otherwise;
#   2. a Job of 3 shards of a paced load, one shard SIGKILLed (as by the OOM killer) and one
#      sent SIGTERM (as on eviction) mid-run: the merge names the first missing and the second
#      interrupted, and exits 1; the failed index is not run again and the third shard is whole;
#   3. a Job whose load has a header with `$(JOB_COMPLETION_INDEX)` in it: k8s-job writes every `$`
#      as `$$`, so the kubelet's `$(VAR)` expansion leaves it, and each pod sends it as written
#      (each pod's report records the headers it sent, `settings.headers`).
# It prints the timings (binaries, image, cluster up, import, each Job, merge, tear-down) and
# tears everything down, also when a step fails. Never skipped: a missing prerequisite fails it
# with a line saying what is missing. Needs root.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cluster=$here/cluster.sh
work=$(mktemp -d)
IMAGE=localhost/h2load-rs:e2e
# The shards sleep until a start this far ahead of the Job's creation: time for the pods to be
# scheduled and started (their containers started within 1-2 s of the Job here; 20 s leaves
# room for a loaded machine, and a late pod fails the skew check below, which says so).
LEAD=20s
# How far apart the shards' measured periods may begin: `merge`'s own tolerance for a part
# (100 ms). The shards wake from a sleep to the same instant on one node; 0-6 ms seen, each
# 1.5-7 ms after the start time.
BOUND_SKEW_MS=100

failures=0
timings=()
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
timing() { timings+=("$1: $2"); echo "e2e: $1 took $2"; }
fail() {
  echo "e2e: FAILED: $*"
  failures=$((failures + 1))
}
# check DESCRIPTION EXPECTED ACTUAL
check() {
  if [ "$2" = "$3" ]; then echo "e2e: ok: $1 ($3)"; else fail "$1: expected $2, got $3"; fi
}
# The kernel settings the kubelet changes, as they were before the cluster came up.
sysctls() {
  local s
  for s in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops; do
    echo "$s=$(cat "/proc/sys/${s//.//}")"
  done
}
sysctls_before=$(sysctls)
# Paths outside its state that a cluster makes: none may be left that was not there before.
host_paths() {
  local p
  for p in /var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /var/run/netns; do
    [ -e "$p" ] && echo "$p"
  done
}
host_paths_before=$(host_paths)
state=${H2LOAD_RS_K8S_STATE:-/tmp/h2load-rs-k8s}
finish() {
  local t
  t=$(now)
  "$cluster" down
  timing "tear-down" "$(took "$t")"
  # Nothing left running or changed on the host.
  check "processes of the cluster left" 0 "$(pgrep -f -c "$state|/k8s-v1\.37\.2/bin/" || true)"
  check "mounts under $state left" 0 "$(grep -c " $state" /proc/mounts || true)"
  # Its pods' cgroups are gone (a cgroup with a process left in it cannot be removed), and so
  # are any kubepods cgroups a misplaced cgroupRoot would have made.
  check "cgroups of the cluster's pods left" 0 \
    "$(find /sys/fs/cgroup -maxdepth 3 -type d \( -name 'h2load-rs-k8s' -o -name 'kubepods*' \) | wc -l)"
  check "kernel settings restored" "$sysctls_before" "$(sysctls)"
  check "host paths as before" "$host_paths_before" "$(host_paths)"
  rm -rf "$work"
  echo "e2e: timings: $(IFS=';'; echo "${timings[*]}")"
  if [ "$failures" -eq 0 ]; then
    echo "e2e: passed"
  else
    echo "e2e: $failures check(s) FAILED"
    exit 1
  fi
}
trap finish EXIT
# A step that must work for the rest to mean anything.
must() {
  if ! "$@"; then
    fail "$*"
    exit 1
  fi
}

# --- the image, the cluster, the target --------------------------------------------------------
t=$(now)
must "$repo/configs/k8s/image.sh" "$work/image.tar" "$IMAGE"
timing "image build" "$(took "$t")"
image_bytes=$(stat -c %s "$work/image.tar")
echo "e2e: image $IMAGE: $image_bytes bytes"
# The image's own binary drives the cluster from the host too (k8s-job, merge).
h2l=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs/static-target}/x86_64-unknown-linux-gnu/release/h2load-rs

t=$(now)
env_line=$("$cluster" up) || {
  fail "the cluster did not come up"
  exit 1
}
eval "$env_line"
timing "cluster up (with binaries)" "$(took "$t")"
t=$(now)
must "$cluster" import "$work/image.tar"
timing "image import" "$(took "$t")"

cat >"$work/target.json" <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"},
 "spec": {"hostNetwork": true, "restartPolicy": "Never", "automountServiceAccountToken": false,
  "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532},
  "containers": [{"name": "target", "image": "$IMAGE", "imagePullPolicy": "Never",
   "args": ["serve", "--port", "0", "--threads", "1"],
   "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
    "capabilities": {"drop": ["ALL"]}}}]}}
EOF
t=$(now)
must kubectl apply -f "$work/target.json" >/dev/null
must kubectl wait --for=condition=Ready pod/target --timeout=120s >/dev/null
url=""
for _ in $(seq 100); do
  url=$(kubectl logs target 2>/dev/null | grep -o 'http://127\.0\.0\.1:[0-9]*' | head -n 1)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || {
  fail "the target pod printed no address"
  exit 1
}
timing "target pod" "$(took "$t")"
echo "e2e: the target pod serves $url"

# Renders a Job of 3 shards named $1 for the load after it, applies it, and waits until each of
# its pods has ended (Completed or killed); prints the start time it was given.
run_job() {
  local name=$1
  shift
  "$h2l" k8s-job --workers 3 --name "$name" --image "$IMAGE" --pull Never --host-network \
    --lead "$LEAD" --cpu 100m --memory 128Mi -- "$@" >"$work/$name.json" 2>/dev/null ||
    return 1
  kubectl apply -f "$work/$name.json" >/dev/null || return 1
  jq -r '.spec.template.spec.containers[0].args as $a | $a[($a | index("--start-at")) + 1]' \
    "$work/$name.json"
}
wait_ended() {
  kubectl wait pod -l "job-name=$1" --timeout=180s \
    --for=jsonpath='{.status.containerStatuses[0].state.terminated}' >/dev/null
}

# --- 1. three shards of one counted load --------------------------------------------------------
TOTAL=30000
t=$(now)
must run_job count -n "$TOTAL" -c 6 -m 4 --proto h2c "$url/" >/dev/null
must wait_ended count
timing "Job count (3 shards, $TOTAL requests, lead $LEAD)" "$(took "$t")"
kubectl logs -l job-name=count --tail=-1 >"$work/count.log"
succeeded() { kubectl get pods -l "job-name=$1" --field-selector=status.phase=Succeeded -o name | wc -l; }
kubectl wait --for=condition=Complete job/count --timeout=60s >/dev/null
check "the Job complete (every index succeeded)" 0 "$?"

t=$(now)
"$h2l" merge - --json "$work/merged.json" <"$work/count.log" >"$work/merge.out" 2>&1
status=$?
timing "merge" "$(took "$t")"
cat "$work/merge.out"
check "merge exit status" 0 "$status"
cell() { jq -r ".cells[0] | $1" "$work/merged.json"; }
# The JSON reports in a log (`--json -` writes each from a line "{" to a line "}"), without the
# unindented stderr lines the runtime may have copied in between (as `merge` reads them).
reports() {
  awk '/^\{$/ { on = 1; print; next } on && /^\}$/ { on = 0; print; next } on && /^[ \t]/ { print }' "$1"
}
check "merged requests" "$TOTAL" "$(cell .requests.total)"
check "merged successes" "$TOTAL" "$(cell .requests.succeeded)"
check "merged connections" 6 "$(cell .connections.opened)"
# Each shard's own report, from the log: 10,000 requests and its histogram's count each.
shard_counts=$(reports "$work/count.log" | jq -s -r '
  [.[] | .cells[0] | "\(.settings.shard.index):\(.requests.total):\(.latency.request.count)"]
  | sort | join(" ")')
check "each shard's requests and histogram count" "1:10000:10000 2:10000:10000 3:10000:10000" "$shard_counts"
check "merged histogram count (the sum of the shards')" "$TOTAL" "$(cell .latency.request.count)"
check "parts in the merged report" 3 "$(cell '.parts.parts | length')"
skew=$(cell .parts.start_skew_ms)
latest=$(cell '[.parts.parts[].start_late_ms] | max')
printf 'e2e: start skew %s ms (bound %s ms); the latest shard began %.1f ms after --start-at\n' \
  "$skew" "$BOUND_SKEW_MS" "$latest"
check "start skew within ${BOUND_SKEW_MS} ms" true "$(awk -v s="$skew" -v b="$BOUND_SKEW_MS" 'BEGIN { print (s <= b) ? "true" : "false" }')"
check "parts outside tolerance" 0 "$(cell '[.parts.parts[] | select(.outside != null)] | length')"
"$h2l" merge - --fail-if 'p99>1us' <"$work/count.log" >/dev/null 2>"$work/breach.err"
check "merge --fail-if 'p99>1us' exit status (breached)" 3 "$?"
grep -q 'threshold breached: p99' "$work/breach.err" || fail "no breach line: $(cat "$work/breach.err")"
"$h2l" merge - --fail-if 'p99>60s' --fail-if 'errors>0%' <"$work/count.log" >/dev/null 2>&1
check "merge --fail-if 'p99>60s' exit status (held)" 0 "$?"

# --- 2. one shard killed, one stopped by SIGTERM -------------------------------------------------
t=$(now)
start=$(run_job broken --rate 150 -D 12s -c 3 --proto h2c "$url/") || {
  fail "the broken Job was not created"
  exit 1
}
# Three seconds into the measured period, index 1 (shard 2/3) is SIGKILLed and index 2 (shard
# 3/3) gets SIGTERM, from the node, as the OOM killer and an eviction would.
start_s=$(date -d "$start" +%s)
while [ "$(date +%s)" -lt $((start_s + 3)) ]; do sleep 0.2; done
container() {
  kubectl get pod -l "job-name=broken,batch.kubernetes.io/job-completion-index=$1" \
    -o jsonpath='{.items[0].status.containerStatuses[0].containerID}' | sed 's#^containerd://##'
}
killed=$(container 1)
stopped=$(container 2)
must "$cluster" ctr tasks kill -s SIGKILL "$killed"
must "$cluster" ctr tasks kill -s SIGTERM "$stopped"
must wait_ended broken
timing "Job broken (3 shards, 12 s at 150/s, 2 stopped)" "$(took "$t")"
kubectl logs -l job-name=broken --tail=-1 >"$work/broken.log" 2>&1
"$h2l" merge - --json "$work/broken-merged.json" <"$work/broken.log" >"$work/broken.out" 2>&1
status=$?
cat "$work/broken.out"
check "merge exit status with a shard missing" 1 "$status"
grep -q 'shard 2/3 missing' "$work/broken.out" || fail "shard 2/3 not named missing"
grep -q 'shard 3/3 (.*) interrupted' "$work/broken.out" || fail "shard 3/3 not named interrupted"
check "merged parts" 2 "$(jq -r '.cells[0].parts.parts | length' "$work/broken-merged.json")"
# The first shard ran whole: 12 s at 50/s.
check "shard 1/3's requests (12 s at 50/s)" 600 "$(reports "$work/broken.log" |
  jq -s -r '[.[] | .cells[0] | select(.settings.shard.index == 1) | .rate.scheduled] | first')"
kubectl wait --for=condition=Failed job/broken --timeout=60s >/dev/null
check "the Job failed (two indexes failed)" 0 "$?"
check "pods that succeeded (shard 1/3 only)" 1 "$(succeeded broken)"
check "pods for index 1 (a failed part is not run again)" 1 \
  "$(kubectl get pod -l job-name=broken,batch.kubernetes.io/job-completion-index=1 -o name | wc -l)"
check "the Job's failed indexes" "1,2" "$(kubectl get job broken -o jsonpath='{.status.failedIndexes}')"

# --- 3. a header the kubelet would expand, reaching the pods as written ---------------------------
t=$(now)
must run_job dollar -n 30 -c 3 --proto h2c -H 'x-idx: $(JOB_COMPLETION_INDEX) $$' "$url/" >/dev/null
must wait_ended dollar
timing "Job dollar (3 shards, 30 requests)" "$(took "$t")"
kubectl logs -l job-name=dollar --tail=-1 >"$work/dollar.log" 2>&1
check "the Job's args (each \$ doubled)" 'x-idx: $$(JOB_COMPLETION_INDEX) $$$$' \
  "$(jq -r '.spec.template.spec.containers[0].args as $a | $a[($a | index("-H")) + 1]' "$work/dollar.json")"
check "the header each pod sent, as written" \
  'x-idx: $(JOB_COMPLETION_INDEX) $$|x-idx: $(JOB_COMPLETION_INDEX) $$|x-idx: $(JOB_COMPLETION_INDEX) $$' \
  "$(reports "$work/dollar.log" | jq -s -r '[.[] | .cells[0].settings.headers[] | select(startswith("x-idx"))] | join("|")')"
"$h2l" merge - <"$work/dollar.log" >/dev/null 2>&1
check "merge of the dollar Job's reports" 0 "$?"
