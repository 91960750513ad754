#!/usr/bin/env bash
# Partial clones through the Linux kernel client (issue 14). A generated
# repository is served by git daemon on 127.0.0.1 (uploadpack.allowFilter,
# uploadpack.allowAnySHA1InWant, transfer.advertiseObjectInfo) and cloned
# with --filter=blob:none; gitnfs serves the clone, fetching what it lacks
# from the daemon, and the guest's NFS client mounts it. Two clones, two
# phases, each e2e/run.sh with its usual checks, the expectation computed
# from the source (computing it from the clone would fetch into it):
#   walk: find_type_f and du_s (names, types and sizes of everything, cold):
#         no blob content fetched (object-info gives sizes), at most one
#         object-info round trip per directory holding blobs
#   read: cat_all (every file read and hashed, every symlink read): every
#         byte and mode equals git's; fetches at most one per directory
#         holding blobs plus one per blob above the 4 MiB prefetch bound
#         (measured on the full tree: 30, the walk's prefetch)
# Each phase prints the server's promisor census (round trips, objects,
# bytes, time) beside the directory and file counts.
#
#   e2e/promisor.sh [--shape full|tiny] [--read-shape full|tiny] [--only walk|read]
#                   [--fetch-wait D] [--slow-fetch SEC] [--timeout SEC] [--keep]
#
# --slow-fetch SEC makes every git fetch of the server SEC seconds slower (a
# git wrapper first in its PATH), to measure --fetch-wait against the Linux
# client's 5 s JUKEBOX pause; JUKEBOX replies (which the client counts as
# op errors) are then expected, and the run reports cat_all's time.
#
# --shape and --read-shape are the phases' trees (default full: 17,000 files
# in 4,300 directories; tiny: about 300 entries). The server runs with
# gitnfs serve's defaults (--fetch-wait 5s) unless --fetch-wait is given:
# the Linux client counts a JUKEBOX as an op error, so a run where one was
# answered fails the errors checks (measured: a batched fetch of this tree
# takes 60-100 ms on 2 loaded cores).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
SHAPE=full READ_SHAPE=full ONLY="" TIMEOUT=900 KEEP=0 FETCH_WAIT="" SLOW=""
while (($#)); do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --read-shape) READ_SHAPE=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --fetch-wait) FETCH_WAIT=$2; shift 2 ;;
    --slow-fetch) SLOW=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "promisor.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d /tmp/gitnfs-promisor-e2e.XXXXXX)
DPID=""
cleanup() {
  [[ -n $DPID ]] && kill -- "-$DPID" 2>/dev/null || true
  ((KEEP)) || rm -rf "$WORK/git" "$WORK/bin"
}
trap cleanup EXIT
mkdir -p "$WORK/bin" "$WORK/git"
(cd "$ROOT" && go build -o "$WORK/bin/gitnfs" ./cmd/gitnfs && go build -o "$WORK/bin/genrepo" ./e2e/genrepo \
  && go build -o "$WORK/bin/census" ./e2e/census)
BIN=$WORK/bin/gitnfs
for tool in git-daemon git-upload-pack; do
  [[ -x $(git --exec-path)/$tool ]] || { echo "promisor.sh: $(git --exec-path)/$tool missing (it comes with git)" >&2; exit 2; }
done

SUITE=promisor.sh
. "$HERE/lib.sh" # fail, pass, die, e2e_accepting

# The sources, one per shape, served by one git daemon.
source_repo() {
  local shape=$1 src=$WORK/git/src-$1.git
  if [[ ! -d $src ]]; then
    "$WORK/bin/genrepo" -o "$src" -shape "$shape" -seed 1 -bare > "$WORK/genrepo-$shape.txt"
    git -C "$src" config uploadpack.allowFilter true
    git -C "$src" config uploadpack.allowAnySHA1InWant true
    git -C "$src" config transfer.advertiseObjectInfo true
  fi
  echo "$src"
}
DPORT=$("$WORK/bin/census" freeport)
setsid git daemon --reuseaddr --listen=127.0.0.1 --port="$DPORT" --base-path="$WORK/git" --export-all \
  "$WORK/git" > "$WORK/daemon.log" 2>&1 &
DPID=$!
e2e_accepting "$DPID" "$DPORT" || { cat "$WORK/daemon.log" >&2; die "git daemon did not start on 127.0.0.1:$DPORT"; }

# counter NAME from a server's census table (its stderr).
counter() { awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }' "$1/server.stderr"; }
# dirs_with_blobs SRC, files SRC: what the tree holds, from git.
dirs_with_blobs() { git -C "$1" ls-tree -r --name-only HEAD | awk -F/ '{ NF--; d = $0; if (!(d in s)) { s[d] = 1; n++ } } END { print n }'; }
blobs() { git -C "$1" ls-tree -r HEAD | wc -l; }
big_blobs() { git -C "$1" ls-tree -r -l HEAD | awk '$4 > 4194304 { n++ } END { print n + 0 }'; }

run_phase() {
  local phase=$1 shape=$2 workloads=$3
  local src clone out rc=0
  src=$(source_repo "$shape")
  clone=$WORK/git/$phase.git
  git clone -q --bare --filter=blob:none "git://127.0.0.1:$DPORT/$(basename "$src")" "$clone"
  out=$WORK/$phase
  local extra=() env=""
  [[ $workloads == *cat_all* ]] || extra+=(--no-content-check)
  local waitflag=""
  [[ -n $FETCH_WAIT ]] && waitflag="--fetch-wait $FETCH_WAIT"
  if [[ -n $SLOW || $FETCH_WAIT == 0 || $FETCH_WAIT == 0s ]]; then
    extra+=(--allow-errors "*:READ,*:GETATTR,*:LOOKUP,*:READDIRPLUS,*:READLINK,*:ACCESS")
  fi
  if [[ -n $SLOW ]]; then
    mkdir -p "$WORK/slowgit"
    printf '#!/bin/sh\nfor a; do [ "$a" = fetch ] && sleep %s && break; done\nexec %s "$@"\n' "$SLOW" "$(command -v git)" > "$WORK/slowgit/git"
    chmod +x "$WORK/slowgit/git"
    env="env PATH=$WORK/slowgit:$PATH "
  fi
  echo "promisor.sh: $phase: $shape tree, blobless clone of git://127.0.0.1:$DPORT/$(basename "$src"): $(git -C "$clone" rev-list --objects --missing=print HEAD | grep -c '^?') of $(git -C "$src" rev-list --objects HEAD | wc -l) objects missing" >&2
  "$HERE/run.sh" --repo "$clone" --expect-repo "$src" --workloads "$workloads" "${extra[@]}" \
    --out "$out" --timeout "$TIMEOUT" \
    --server-cmd "$env$BIN serve --repo {repo} --rev {rev} --listen 127.0.0.1:{port} --no-git-dir $waitflag" \
    > "$WORK/$phase.txt" 2>&1 || rc=$?
  grep -E '^(PASS|FAIL)|^e2e: (PASSED|FAILED)' "$WORK/$phase.txt" | sed "s/^/  [$phase] /"
  ((rc == 0)) || fail "run.sh/$phase             exit $rc (log: $WORK/$phase.txt)"
  local fetches sizereq objects bytes fetchms sizems failures dirs files big jukebox
  fetches=$(counter "$out" PromisorFetches)
  sizereq=$(counter "$out" PromisorSizeRequests)
  objects=$(counter "$out" PromisorObjectsFetched)
  bytes=$(counter "$out" PromisorObjectBytes)
  fetchms=$(($(counter "$out" PromisorFetchNs) / 1000000))
  sizems=$(($(counter "$out" PromisorSizeNs) / 1000000))
  failures=$(counter "$out" PromisorFailures)
  jukebox=$({ grep -o 'NFS3ERR_JUKEBOX=[0-9]*' "$out/server.stderr" || true; } | awk -F= '{ n += $2 } END { print n + 0 }')
  dirs=$(dirs_with_blobs "$src")
  files=$(blobs "$src")
  big=$(big_blobs "$src")
  local took
  took=$(grep -oE 'status/[a-z_]+ +ok in [0-9.]+ s' "$WORK/$phase.txt" | tr '\n' ' ')
  echo "promisor.sh: $phase: ${took}(--fetch-wait ${FETCH_WAIT:-5s, the default}${SLOW:+, fetches ${SLOW}s slower})"
  echo "promisor.sh: $phase census: $files blobs in $dirs directories; $sizereq object-info round trips (${sizems} ms), $fetches fetches (${fetchms} ms) of $objects objects in $bytes object bytes, $failures failed round trips, $jukebox JUKEBOX replies"
  ((failures == 0)) || fail "failures/$phase          $failures round trips to the remote failed"
  case $phase in
    walk)
      ((fetches == 0)) && pass "walk/no-content            no blob fetched for the names-and-sizes walk ($sizereq object-info round trips)" \
        || fail "walk/no-content            $fetches fetches during a names-and-sizes walk, want 0"
      ((sizereq <= dirs)) && pass "walk/round-trips           $sizereq object-info round trips for $dirs directories with blobs" \
        || fail "walk/round-trips           $sizereq object-info round trips, want at most one per directory with blobs ($dirs)"
      ;;
    read)
      ((fetches <= dirs + big)) && pass "read/round-trips           $fetches fetches for $dirs directories with blobs and $files blobs (+$big over 4 MiB)" \
        || fail "read/round-trips           $fetches fetches, want at most one per directory with blobs ($dirs) plus $big"
      ((objects == files || objects <= files)) || fail "read/objects               $objects objects fetched for $files blobs"
      ;;
  esac
}

[[ -z $ONLY || $ONLY == walk ]] && run_phase walk "$SHAPE" find_type_f,du_s
[[ -z $ONLY || $ONLY == read ]] && run_phase read "$READ_SHAPE" cat_all
((FAIL == 0)) || { echo "promisor.sh: FAILED (logs in $WORK)"; exit 1; }
echo "promisor.sh: PASSED (logs in $WORK)"
