#!/usr/bin/env bash
# Regenerates the checked-in Go code of the gRPC target (probepb/, helloworldpb/) from proto/.
# Only needed after a change to a .proto file: the generated code is committed, so building the
# server needs no protoc. Uses protoc from PATH (Debian: protobuf-compiler) or else the one bundled
# with grpcio-tools in the test bed's Python venv (tests/setup.sh makes it); the two Go plugins
# are installed from the Go module proxy into the cache when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/h2load-rs
bin="$cache/grpc-gen/bin"
mod=h2load-rs/tests/grpc-target

[ -x "$bin/protoc-gen-go" ] ||
  GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
[ -x "$bin/protoc-gen-go-grpc" ] ||
  GOBIN="$bin" go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

if command -v protoc >/dev/null; then
  protoc=(protoc)
else
  protoc=("$cache/grpc-py/bin/python" -m grpc_tools.protoc)
fi

cd "$here/proto"
for name in probe helloworld; do
  rm -rf "$here/${name}pb"
  mkdir -p "$here/${name}pb"
  "${protoc[@]}" -I . \
    --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
    --go_out="$here/${name}pb" --go_opt=paths=source_relative --go_opt="M$name.proto=$mod/${name}pb" \
    --go-grpc_out="$here/${name}pb" --go-grpc_opt=paths=source_relative \
    --go-grpc_opt="M$name.proto=$mod/${name}pb" \
    "$name.proto"
done
