#!/usr/bin/env bash
# gonfs-build.sh — build go-nfs v0.0.4's stock example server (example/osnfs:
# osfs + NullAuthHandler + CachingHandler with its 1,024-handle cache) in a
# throwaway module under /tmp, and print the binary's path. The handlers are
# go-nfs's own; the only change to example/osnfs/main.go is the listener,
# bound to 127.0.0.1 instead of every interface. Usage of the binary:
# `osnfs DIR PORT` (NFS and MOUNT on that one port).
#
# This is the comparison server of the e2e suite and of the benchmark table:
#   e2e/run.sh --server gonfs
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin
WORK=${GONFS_WORK:-/tmp/gitnfs-e2e-gonfs}
VERSION=v0.0.4
BIN=$WORK/osnfs-$VERSION
if [[ -x $BIN ]]; then echo "$BIN"; exit 0; fi
mkdir -p "$WORK/osnfs"
cd "$WORK"
[[ -f go.mod ]] || go mod init gitnfs-e2e-gonfs >/dev/null 2>&1
export GOFLAGS=-mod=mod
go get "github.com/willscott/go-nfs@$VERSION" "github.com/willscott/go-nfs/helpers@$VERSION" \
       github.com/go-git/go-billy/v5/osfs@v5.6.0 >&2
SRC=$(go list -m -f '{{.Dir}}' github.com/willscott/go-nfs)/example/osnfs
cp "$SRC"/changeos.go "$SRC"/changeos_unix.go osnfs/
sed -e 's/net.Listen("tcp", ":"+port)/net.Listen("tcp", "127.0.0.1:"+port)/' "$SRC/main.go" > osnfs/main.go
chmod u+w osnfs/*.go
grep -q '"127.0.0.1:"+port' osnfs/main.go || { echo "gonfs-build: could not bind osnfs to 127.0.0.1" >&2; exit 1; }
go build -o "$BIN.tmp" ./osnfs >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
