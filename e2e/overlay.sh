#!/usr/bin/env bash
# The writable overlay through the Linux kernel client (issue 5): serves the
# generated tree with `gitnfs serve --overlay DIR` and runs the guest's write
# workloads on it: `posix` (create, write, read back, append, truncate, chmod,
# utimes, symlink, hard link, renames of new and tracked files and of a tracked
# directory, rename over a target, unlink, rmdir; each step stat'ed and
# asserted) and `install` (6,000 files in 600 staged directories renamed into
# place, then stat'ed 3 times; ops/s). Then, on the host: `gitnfs status`
# lists the changes, and every file under the repository's objects directory
# is byte-identical to before the run (sha256 of each).
#
#   e2e/overlay.sh [--shape tiny|full] [--compare] [--no-overlay]
#     --compare     also run `install` against stock go-nfs (--server gonfs)
#                   and print ops/s side by side
#     --no-overlay  serve without --overlay (read-only): posix must fail
#                   (to watch the checks fail)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
SHAPE=tiny COMPARE=0 OVERLAY=1
while (($#)); do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --compare) COMPARE=1; shift ;;
    --no-overlay) OVERLAY=0; shift ;;
    *) echo "overlay.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d /tmp/gitnfs-overlay-e2e.XXXXXX)
trap 'rm -rf "$WORK/repo" "$WORK/bin"' EXIT
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/gitnfs" ./cmd/gitnfs && go build -o "$WORK/bin/genrepo" ./e2e/genrepo)
BIN=$WORK/bin/gitnfs
REPO=$WORK/repo
"$WORK/bin/genrepo" -o "$REPO" -shape "$SHAPE" -seed 1 > "$WORK/genrepo.txt"
OBJ=$(git -C "$REPO" rev-parse --path-format=absolute --git-path objects)
digest() { (cd "$OBJ" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) ; }
digest > "$WORK/objects.before"
echo "overlay.sh: $(wc -l < "$WORK/objects.before") files under $OBJ hashed" >&2

OVL_ARG="--overlay $WORK/overlay"
((OVERLAY)) || OVL_ARG=""
# posix/install look up names before creating them: those LOOKUPs answer
# NOENT by design (and count as errors in the client's mountstats); posix's
# rmdir of a non-empty directory must answer NOTEMPTY (one RMDIR error).
RC=0
"$HERE/run.sh" --repo "$REPO" --shape "$SHAPE" --workloads posix,install --no-content-check \
  --allow-errors posix:LOOKUP,posix:RMDIR,install:LOOKUP --out "$WORK/out" \
  --server-cmd "$BIN serve --repo {repo} --rev {rev} $OVL_ARG --listen 127.0.0.1:{port} --no-git-dir" || RC=$?

FAIL=0
fail() { echo "FAIL $*"; FAIL=1; }
pass() { echo "PASS $*"; }
((RC == 0)) || fail "run.sh                    exit $RC (see above)"
if ((OVERLAY)); then
  SRC=0
  "$BIN" status --overlay "$WORK/overlay" --repo "$REPO" > "$WORK/status.txt" 2> "$WORK/status.stderr" || SRC=$?
  echo "==== gitnfs status --overlay (exit $SRC): $(wc -l < "$WORK/status.txt") lines ===="
  head -n 12 "$WORK/status.txt"
  nA=$(grep -c '^A ' "$WORK/status.txt" || true)
  nR=$(grep -c '^R' "$WORK/status.txt" || true)
  if ((SRC == 1 && nA >= 6000 && nR >= 2)); then
    pass "overlay-status            exit 1, $nA added (install's 6,000 + posix), $nR renamed (tracked file, tracked dir's files)"
  else
    fail "overlay-status            exit $SRC, $nA added (want >= 6000), $nR renamed (want >= 2); $(head -c 300 "$WORK/status.stderr")"
  fi
fi
digest > "$WORK/objects.after"
if cmp -s "$WORK/objects.before" "$WORK/objects.after"; then
  pass "objects-unchanged         $(wc -l < "$WORK/objects.after") files under the objects dir byte-identical (sha256)"
else
  fail "objects-unchanged         the object store changed:"
  diff "$WORK/objects.before" "$WORK/objects.after" | head -n 10
fi

ops() { sed -n 's/.*workload=install status=ok .*ops_per_s=\([0-9]*\).*/\1/p' "$1/census.txt" | head -n1; }
if ((COMPARE)); then
  GRC=0
  "$HERE/run.sh" --repo "$REPO" --shape "$SHAPE" --server gonfs --workloads install --no-content-check \
    --allow-errors install:LOOKUP --out "$WORK/out-gonfs" > "$WORK/gonfs.log" 2>&1 || GRC=$?
  echo "==== install benchmark ($SHAPE tree, same VM harness) ===="
  printf '%-28s %10s %10s %12s %10s %10s\n' server ops/s ops "write ops/s" stats/s RPCs
  for s in "gitnfs --overlay:$WORK/out" "go-nfs v0.0.4 osnfs:$WORK/out-gonfs"; do
    n=${s%%:*} d=${s#*:}
    l=$(grep -m1 'workload=install status=' "$d/census.txt" || true)
    g() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<< "$l"; }
    printf '%-28s %10s %10s %12s %10s %10s\n' "$n" "$(g ops_per_s)" "$(g ops)" "$(g write_ops_per_s)" "$(g stats_per_s)" "$(g total_rpcs)"
  done
  if ((GRC != 0)); then
    echo "(the go-nfs run exited $GRC; its failed checks, not counted here:)"
    grep '^FAIL' "$WORK/gonfs.log" || true
  fi
fi
echo "overlay.sh: logs in $WORK"
if ((FAIL)); then echo "overlay.sh: FAILED"; exit 1; fi
echo "overlay.sh: PASSED"
