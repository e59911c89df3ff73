#!/usr/bin/env bash
# A real single-node Kubernetes cluster for the end-to-end test (tests/k8s/e2e.sh), on loopback.
#   tests/k8s/cluster.sh up      start it; prints `export KUBECONFIG=...` on stdout
#   tests/k8s/cluster.sh down    stop it and undo what it changed on the host
#   tests/k8s/cluster.sh import OUT.tar   import an image archive into the node (no registry)
#   tests/k8s/cluster.sh binaries         only fill the cache of Kubernetes binaries
#   tests/k8s/cluster.sh ctr ARGS...      containerd's ctr on the node (namespace k8s.io)
#
# Parts: etcd, containerd, runc and the CNI plugins from Debian (installed when missing), and
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl v1.37.2. Those five
# come from a cache outside the checkout (H2LOAD_RS_CACHE, default ~/.cache/h2load-rs): filled from
# a prebuilt archive in ../shared/k8s when the checkout has one beside it (checked by its sha256),
# else built from the Go module proxy (11 minutes on 2 quiet cores, once). H2LOAD_RS_K8S_ARCHIVE
# names another prebuilt archive; set empty, it makes the script build.
#
# What this sandbox-like host needs (each found wanting stops `up` with one line saying so):
# root, cgroup v1 or v2 mounted, overlayfs. Everything listens on 127.0.0.1 only, on ports of its
# own (etcd 12379-12380, apiserver 16443, kubelet 20250 and 20248); there is no kube-proxy and no
# cluster DNS, so pods that talk to each other use hostNetwork and 127.0.0.1. Pod sandboxes run a
# pause image built here (tests/k8s/pause.c). State lives in H2LOAD_RS_K8S_STATE (default
# /tmp/h2load-rs-k8s), fresh for each `up`.
#
# `down` stops every process `up` started and every container the kubelet ran, unmounts and
# removes the state, removes its pods' cgroups, the shim sockets, network namespaces,
# /var/log/containers links and the directories (/var/lib/kubelet, /run/containerd, ...) made
# while the cluster ran, and restores the kernel settings the kubelet changes
# (vm.overcommit_memory, kernel.panic, ...).
set -euo pipefail

K8S_VERSION=v1.37.2
K8S_MODULE_VERSION=v0.37.2
SHARED_ARCHIVE_SHA256=da59f5d9e5cc9dd25b3c2f71636a589e5228af2aa85c62c28303806cafabac6e
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
# The kubelet sets these; `down` puts back the values `up` found.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
ETCD_PORT=12379
APISERVER_PORT=16443
KUBELET_PORT=20250
PAUSE_IMAGE=localhost/pause:h2load-rs
CGROUP_ROOT=h2load-rs-k8s

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${H2LOAD_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs}
bin=$cache/k8s-$K8S_VERSION/bin
state=${H2LOAD_RS_K8S_STATE:-/tmp/h2load-rs-k8s}
sock=$state/containerd/containerd.sock
# The node's name: the apiserver reaches the kubelet by it (a node IP may not be loopback), so
# it must resolve to the loopback address the kubelet listens on, whatever this host is called.
node=localhost

say() { echo "cluster.sh: $*" >&2; }
die() {
  say "$*"
  exit 1
}
# Seconds since the epoch with milliseconds, for the timings printed.
now() { date +%s.%N | cut -c1-14; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      die "$what not ready after ${limit}s (logs: $state/logs)"
    fi
    sleep 0.2
  done
}

prerequisites() {
  [ "$(id -u)" -eq 0 ] || die "needs root (it runs containerd and the kubelet); run it as root"
  if [ ! -d /sys/fs/cgroup/memory ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
    die "needs cgroups: neither cgroup v1's memory controller nor cgroup v2 is mounted at /sys/fs/cgroup"
  fi
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
    die "needs overlayfs (containerd's snapshotter): the kernel has no 'overlay' filesystem"
  node_address=$(getent ahostsv4 "$node" | awk 'NR == 1 { print $1 }')
  case "$node_address" in
    127.*) ;;
    *) die "needs '$node' to resolve to a loopback address (it gives '${node_address:-nothing}'): add '127.0.0.1 $node' to /etc/hosts" ;;
  esac
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  command -v etcd >/dev/null || need+=(etcd-server)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null || need+=(iptables)
  command -v conntrack >/dev/null || need+=(conntrack)
  command -v socat >/dev/null || need+=(socat)
  command -v openssl >/dev/null || need+=(openssl)
  command -v gcc >/dev/null || need+=(gcc libc6-dev)
  command -v jq >/dev/null || need+=(jq)
  if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    # No service starts from the install: the cluster runs its own instances.
    local policy=/usr/sbin/policy-rc.d created=""
    if [ ! -e $policy ]; then
      printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy && created=1
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${need[@]}" >/dev/null || {
      if [ -n "$created" ]; then rm -f $policy; fi
      die "could not install ${need[*]} with apt-get"
    }
    # Not `[ -n "$created" ] && rm ...`: as the function's last command it made the function
    # fail, and `up` end without a word, where a policy-rc.d was there before (Debian images).
    if [ -n "$created" ]; then rm -f $policy; fi
  fi
}

# The five Kubernetes binaries, in $bin: from the cache, else the shared archive, else built.
binaries() {
  local c missing=""
  for c in "${COMPONENTS[@]}"; do [ -x "$bin/$c" ] || missing=1; done
  if [ -z "$missing" ]; then
    say "Kubernetes $K8S_VERSION binaries: cached in $bin"
    return
  fi
  mkdir -p "$bin"
  local shared=${H2LOAD_RS_K8S_ARCHIVE-$repo/../shared/k8s/kubernetes-$K8S_VERSION-linux-amd64.tar.xz}
  if [ -f "$shared" ] && [ "$(sha256sum "$shared" | cut -d' ' -f1)" = "$SHARED_ARCHIVE_SHA256" ]; then
    say "Kubernetes $K8S_VERSION binaries: unpacking $shared"
    tar -xJf "$shared" -C "$bin" "${COMPONENTS[@]}"
  else
    if [ -f "$shared" ]; then say "$shared does not have the expected sha256: building instead"; fi
    build_binaries
  fi
}

# Builds the five from the Go module proxy: the k8s.io/kubernetes module with its staging
# replacements turned into the published k8s.io/* modules of the same release.
build_binaries() {
  command -v go >/dev/null || die "needs Go to build Kubernetes $K8S_VERSION (no cached binaries)"
  say "Kubernetes $K8S_VERSION binaries: building from the Go module proxy (about 11 minutes)"
  local src=$cache/k8s-$K8S_VERSION/src dir log=$cache/k8s-$K8S_VERSION/build.log
  rm -rf "$src"
  : >"$log"
  dir=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" 2>>"$log" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "go mod download k8s.io/kubernetes@$K8S_VERSION failed (see $log)"
  cp -r "$dir" "$src"
  chmod -R u+w "$src"
  # vendor/ holds only an OWNERS file and would force vendor mode; go.work points at staging/.
  rm -rf "$src/vendor" "$src/go.work" "$src/go.work.sum"
  awk -v v="$K8S_MODULE_VERSION" '
    /^replace \($/ { skip = 1; next }
    skip && /^\)$/ { skip = 0; next }
    skip { next }
    /^replace k8s\.io\// { next }
    { if ($0 ~ /^\tk8s\.io\/[^ ]+ v0\.0\.0$/) sub(/v0\.0\.0$/, v); print }
  ' "$src/go.mod" >"$src/go.mod.new"
  mv "$src/go.mod.new" "$src/go.mod"
  (cd "$src" && GOFLAGS=-mod=mod go mod tidy) >>"$log" 2>&1 ||
    die "go mod tidy of k8s.io/kubernetes failed (see $log)"
  local ldflags="-s -w" pkg c
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  done
  for c in "${COMPONENTS[@]}"; do
    (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/$c.partial" "./cmd/$c") \
      >>"$log" 2>&1 || die "building $c failed (see $log)"
    mv "$bin/$c.partial" "$bin/$c"
  done
  rm -rf "$src"
  say "Kubernetes $K8S_VERSION binaries: built into $bin"
}

# --- certificates and kubeconfigs -----------------------------------------------------------

# cert NAME CN [O] [SANS]: a key and a certificate signed by the cluster's CA.
cert() {
  local name=$1 cn=$2 org=${3:-} sans=${4:-} subj ext
  subj="/CN=$cn"
  [ -n "$org" ] && subj="/O=$org$subj"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$state/pki/$name.key" -subj "$subj" \
    -out "$state/pki/$name.csr" 2>/dev/null
  ext="$state/pki/$name.ext"
  {
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$sans" ]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$sans"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl x509 -req -in "$state/pki/$name.csr" -CA "$state/pki/ca.crt" -CAkey "$state/pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$ext" -out "$state/pki/$name.crt" 2>/dev/null
}

kubeconfig() {
  local name=$1
  cat >"$state/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: h2load-rs
  cluster:
    certificate-authority: $state/pki/ca.crt
    server: https://127.0.0.1:$APISERVER_PORT
users:
- name: $name
  user:
    client-certificate: $state/pki/$name.crt
    client-key: $state/pki/$name.key
contexts:
- name: h2load-rs
  context: {cluster: h2load-rs, user: $name}
current-context: h2load-rs
EOF
}

pki() {
  mkdir -p "$state/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=h2load-rs-test-ca" \
    -keyout "$state/pki/ca.key" -out "$state/pki/ca.crt" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "IP:127.0.0.1,DNS:localhost,DNS:$node,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  cert kubelet-serving "system:node:$node" system:nodes "IP:127.0.0.1,DNS:localhost,DNS:$node"
  cert admin admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kubelet "system:node:$node" system:nodes
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  openssl genrsa -out "$state/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$state/pki/sa.key" -pubout -out "$state/pki/sa.pub" 2>/dev/null
  local k
  for k in admin controller-manager scheduler kubelet; do kubeconfig "$k"; done
}

# --- daemons --------------------------------------------------------------------------------

# start NAME COMMAND...: in its own session, logging to $state/logs/NAME.log.
start() {
  local name=$1
  shift
  setsid "$@" >"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$state/run/$name.pid"
}

containerd_config() {
  mkdir -p "$state/containerd" "$state/cni/net.d"
  cat >"$state/containerd/config.toml" <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This host lacks CAP_SYS_RESOURCE: the kubelet's oom_score_adj of -998 for sandboxes would
  # fail every one of them ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
EOF
  # A bridge without gateway or masquerade: the runtime reports its network ready without
  # touching the host's forwarding or NAT. Test pods use hostNetwork, so it is never used.
  cat >"$state/cni/net.d/10-h2load-rs.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "h2load-rs", "plugins": [{"type": "bridge", "bridge": "h2lrs0",
  "isGateway": false, "ipMasq": false, "ipam": {"type": "host-local",
  "ranges": [[{"subnet": "10.244.99.0/24"}]], "dataDir": "$state/cni/ipam"}}]}
EOF
}

kubelet_config() {
  cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_address
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $((KUBELET_PORT - 2))
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $state/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $state/pki/kubelet-serving.crt
tlsPrivateKeyFile: $state/pki/kubelet-serving.key
# PID 1 is not systemd, and the host may have cgroup v1 only.
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
failCgroupV1: false
makeIPTablesUtilChains: false
failSwapOn: false
containerRuntimeEndpoint: unix://$sock
podLogsDir: $state/pod-logs
# The host's disk is shared with everything else: never evict or collect images for its sake.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

save_sysctls() {
  local s
  : >"$state/sysctls"
  for s in "${SYSCTLS[@]}"; do
    if [ -f "/proc/sys/${s//.//}" ]; then echo "$s=$(cat "/proc/sys/${s//.//}")" >>"$state/sysctls"; fi
  done
}

node_ready() {
  local started=$1
  # A heartbeat newer than this kubelet's start: a node object kept from an earlier run reads
  # Ready before the new kubelet has said anything.
  "$bin/kubectl" get node "$node" -o json 2>/dev/null | jq -e --arg t "$started" '
    ([.status.conditions[] | select(.type == "Ready" and .status == "True" and .lastHeartbeatTime >= $t)]
      | length > 0)
    # and schedulable: the node controller has lifted its not-ready taint.
    and ([.spec.taints // [] | .[] | select(.effect == "NoSchedule")] | length == 0)
  ' >/dev/null
}

up() {
  prerequisites
  local t0 tb
  t0=$(now)
  binaries
  tb=$(now)
  if [ -e "$state/run" ]; then
    say "a cluster from an earlier run is in $state: taking it down first"
    down
  fi
  # Only a directory of ours is ever removed: one this script made, with its mark.
  if [ -e "$state" ] && [ ! -f "$state/.h2load-rs-k8s" ] && [ -n "$(ls -A "$state" 2>/dev/null)" ]; then
    die "$state is not empty and not a state this script made: set H2LOAD_RS_K8S_STATE to another path"
  fi
  rm -rf "$state"
  mkdir -p "$state/logs" "$state/run" "$state/pod-logs"
  touch "$state/.h2load-rs-k8s"
  # A failed start leaves nothing running.
  trap 'say "start failed: taking down what started"; down' EXIT
  save_sysctls
  # What the kubelet and containerd leave outside $state is told apart from what was there.
  ls /run/containerd/s 2>/dev/null >"$state/run/shims.before" || true
  ls /var/run/netns 2>/dev/null >"$state/run/netns.before" || true
  # Paths they make whatever they are told (the kubelet's device-plugin socket, runc's state, the
  # containers' log links): removed by `down` when they were not there before.
  local p
  for p in /var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /var/run/netns; do
    [ -e "$p" ] || echo "$p" >>"$state/run/created"
  done
  pki
  export KUBECONFIG=$state/admin.kubeconfig

  start etcd etcd --name h2load-rs --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "h2load-rs=http://127.0.0.1:$((ETCD_PORT + 1))"
  containerd_config
  start containerd containerd --config "$state/containerd/config.toml"
  wait_for 30 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"

  start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --endpoint-reconciler-type none --service-cluster-ip-range 10.96.0.0/24 \
    --client-ca-file "$state/pki/ca.crt" \
    --tls-cert-file "$state/pki/apiserver.crt" --tls-private-key-file "$state/pki/apiserver.key" \
    --kubelet-client-certificate "$state/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$state/pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$state/pki/ca.crt" \
    --kubelet-preferred-address-types Hostname \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$state/pki/sa.pub" \
    --service-account-signing-key-file "$state/pki/sa.key" \
    --authorization-mode Node,RBAC

  # The pause image, while the apiserver starts.
  wait_for 30 containerd ctr --address "$sock" version
  gcc -O2 -static -o "$state/pause" "$here/pause.c"
  "$repo/configs/k8s/oci-archive.sh" "$PAUSE_IMAGE" "$state/pause" "$state/pause.tar" >/dev/null
  import "$state/pause.tar"

  wait_for 60 kube-apiserver "$bin/kubectl" get --raw /readyz
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$state/controller-manager.kubeconfig" --bind-address 127.0.0.1 --secure-port 0 \
    --leader-elect=false --service-account-private-key-file "$state/pki/sa.key" \
    --root-ca-file "$state/pki/ca.crt" --use-service-account-credentials=true
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$state/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false
  kubelet_config
  # The kubelet's cgroup root must exist in every hierarchy; a new cpuset has no CPUs or memory
  # nodes until given its parent's.
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h$CGROUP_ROOT"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
    fi
  done
  local kubelet_started
  kubelet_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start kubelet "$bin/kubelet" --config "$state/kubelet.yaml" \
    --kubeconfig "$state/kubelet.kubeconfig" --root-dir "$state/kubelet" \
    --hostname-override "$node"
  wait_for 90 "node $node" node_ready "$kubelet_started"
  # Pods are admitted only once the namespace's default service account exists.
  wait_for 60 "the default service account" "$bin/kubectl" get serviceaccount default
  say "binaries ready in $(awk -v a="$t0" -v b="$tb" 'BEGIN { printf "%.1f", b - a }') s;" \
    "cluster up in $(since "$tb") s (node $node Ready)"
  trap - EXIT
  echo "export KUBECONFIG=$KUBECONFIG PATH=$bin:\$PATH"
}

# Imports an image archive into the node's containerd, where the kubelet finds it.
import() {
  ctr --address "$sock" -n k8s.io images import "$1" >/dev/null ||
    die "importing $1 into the node failed"
}

# Sends a signal to each process started by `up` still running.
signal_daemons() {
  local sig=$1 f
  for f in "$state"/run/*.pid; do
    [ -f "$f" ] || continue
    kill "-$sig" "$(cat "$f")" 2>/dev/null || true
  done
}

# The cgroups of this cluster's pods, deepest first: all under a root of its own (the kubelet's
# cgroupRoot), so a kubelet of the host's own is never touched.
pod_cgroups() {
  find /sys/fs/cgroup -depth -type d -path "*/$CGROUP_ROOT*" 2>/dev/null
}

down() {
  [ -d "$state/run" ] && [ -f "$state/.h2load-rs-k8s" ] || return 0
  local t0 pid f
  t0=$(now)
  # The kubelet first, so that nothing restarts what is stopped next.
  [ -f "$state/run/kubelet.pid" ] && kill "$(cat "$state/run/kubelet.pid")" 2>/dev/null || true
  # Every container's processes, wherever the kubelet put them.
  for f in $(pod_cgroups | sed 's#$#/cgroup.procs#'); do
    [ -f "$f" ] && for pid in $(cat "$f" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  done
  # The shims of our containerd exit once their containers are gone; the ones still there go now.
  pkill -9 -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null || true
  signal_daemons TERM
  # etcd and the Kubernetes daemons stop within 3 s; containerd waits 15 s for shims that are
  # gone already. Its state is thrown away next, so it does not get them.
  local deadline=$((SECONDS + 5))
  for f in "$state"/run/*.pid; do
    [ -f "$f" ] || continue
    while kill -0 "$(cat "$f")" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  done
  signal_daemons KILL
  # Mounts under the state (container root filesystems, shm, kubelet volumes), deepest first.
  awk -v s="$state" '$2 == s || index($2, s "/") == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  for f in $(pod_cgroups); do rmdir "$f" 2>/dev/null || true; done
  if [ -f "$state/run/shims.before" ]; then
    for f in $(ls /run/containerd/s 2>/dev/null); do
      grep -qx "$f" "$state/run/shims.before" || rm -f "/run/containerd/s/$f"
    done
  fi
  if [ -f "$state/run/netns.before" ]; then
    for f in $(ls /var/run/netns 2>/dev/null); do
      grep -qx "$f" "$state/run/netns.before" || { umount "/var/run/netns/$f" 2>/dev/null; rm -f "/var/run/netns/$f"; }
    done
  fi
  find /var/log/containers -maxdepth 1 -lname "$state/*" -delete 2>/dev/null || true
  if [ -f "$state/run/created" ]; then
    while read -r f; do rm -rf "$f"; done <"$state/run/created"
  fi
  ip link delete h2lrs0 2>/dev/null || true
  if [ -f "$state/sysctls" ]; then
    while IFS='=' read -r k v; do sysctl -q -w "$k=$v" >/dev/null 2>&1 || say "could not restore $k=$v"; done <"$state/sysctls"
  fi
  rm -rf "$state"
  local left
  left=$(pod_cgroups | wc -l)
  [ "$left" -eq 0 ] || say "$left cgroups of its pods could not be removed"
  say "cluster down in $(since "$t0") s"
}

case "${1:-}" in
  up) up ;;
  binaries) binaries ;;
  ctr)
    shift
    exec ctr --address "$sock" -n k8s.io "$@"
    ;;
  down) down ;;
  import)
    [ $# -eq 2 ] || die "usage: $0 import OUT.tar"
    import "$2"
    ;;
  *)
    echo "usage: $0 up|down|import OUT.tar|binaries|ctr ARGS..." >&2
    exit 2
    ;;
esac
