#!/usr/bin/env bash
# Writes a one-binary container image as an OCI image archive, with no Docker engine and no
# registry: `oci-archive.sh REF BINARY OUT.tar`. The image holds BINARY (statically linked) as
# /usr/local/bin/NAME and nothing else, runs it as its entry point as user 65532 (non-root), and is
# named REF. The archive also carries Docker's manifest.json, so every importer takes it:
#   ctr -n k8s.io images import OUT.tar      (containerd: k3s, kubeadm clusters)
#   kind load image-archive OUT.tar           docker load -i OUT.tar
#   skopeo copy oci-archive:OUT.tar docker://registry.example.com/you/h2load-rs:TAG
# The archive is reproducible: the same binary gives the same bytes and the same image digest.
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 REF BINARY OUT.tar" >&2
  exit 2
fi
ref=$1 binary=$2 out=$3
name=$(basename "$binary")
case "$ref" in
  *:*) tag=${ref##*:} ;;
  *) echo "$0: REF needs a tag (name:tag), got '$ref'" >&2; exit 2 ;;
esac
linkage=$(ldd "$binary" 2>&1 || true)
if ! grep -qE 'statically linked|not a dynamic executable' <<<"$linkage"; then
  echo "$0: $binary is not statically linked: an image FROM scratch has no libraries" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/usr/local/bin" "$work/image/blobs/sha256"
install -m 0755 "$binary" "$work/root/usr/local/bin/$name"

# Reproducible tar: sorted names, owner root, one timestamp.
reproducible_tar() { tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 "$@"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
# Moves a file into the blob store under its digest and prints the digest.
blob() {
  local digest
  digest=$(sha "$1")
  mv "$1" "$work/image/blobs/sha256/$digest"
  echo "$digest"
}

reproducible_tar -C "$work/root" -cf "$work/layer.tar" usr
diff_id=$(sha "$work/layer.tar")
gzip -n -9 "$work/layer.tar"
layer_size=$(size "$work/layer.tar.gz")
layer=$(blob "$work/layer.tar.gz")

printf '{"architecture":"amd64","os":"linux","config":{"User":"65532:65532","Entrypoint":["/usr/local/bin/%s"],"Env":["PATH=/usr/local/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$name" "$diff_id" >"$work/config.json"
config_size=$(size "$work/config.json")
config=$(blob "$work/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
  "$config" "$config_size" "$layer" "$layer_size" >"$work/manifest.json"
manifest_size=$(size "$work/manifest.json")
manifest=$(blob "$work/manifest.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest" "$manifest_size" "$ref" "$tag" >"$work/image/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/image/oci-layout"
printf '[{"Config":"blobs/sha256/%s","RepoTags":["%s"],"Layers":["blobs/sha256/%s"]}]' \
  "$config" "$ref" "$layer" >"$work/image/manifest.json"

reproducible_tar -C "$work/image" -cf "$out.partial" .
mv "$out.partial" "$out"
echo "$out: image $ref, sha256:$manifest, $(size "$out") bytes (layer $layer_size bytes compressed)"
