#!/usr/bin/env bash
# Builds the h2load-rs image with no Docker engine and no registry: a statically linked release
# binary, alone in an image FROM scratch, running as user 65532, written as an OCI image archive.
#   configs/k8s/image.sh [OUT.tar [REF]]
# OUT.tar defaults to target/h2load-rs-image.tar, REF to localhost/h2load-rs:VERSION (the
# Cargo.toml version). Import it where the cluster's nodes run containers, e.g.
# `ctr -n k8s.io images import OUT.tar`, and give `k8s-job --image REF --pull Never`; or push it
# with `skopeo copy oci-archive:OUT.tar docker://REGISTRY/h2load-rs:TAG`.
# The static build has its own target directory (CARGO_TARGET_DIR or, by default,
# ~/.cache/h2load-rs/static-target) so that it does not invalidate the checkout's own builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
out=${1:-$root/target/h2load-rs-image.tar}
ref=${2:-localhost/h2load-rs:$version}
target_dir=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs/static-target}
triple=x86_64-unknown-linux-gnu

# crt-static links glibc statically (glibc 2.34 and later resolve names without loading NSS
# modules, so DNS names work in an image that has no libraries). With --target, the flag reaches
# only the binary, not build scripts or proc macros. No debug info: the image stays small.
(cd "$root" && RUSTFLAGS="-C target-feature=+crt-static" \
  CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols \
  cargo build --release --locked --target "$triple" --target-dir "$target_dir" --bin h2load-rs)
mkdir -p "$(dirname "$out")"
"$root/configs/k8s/oci-archive.sh" "$ref" "$target_dir/$triple/release/h2load-rs" "$out"
