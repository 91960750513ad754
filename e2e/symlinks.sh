#!/usr/bin/env bash
# --symlink-attrs through the Linux kernel client (issue 15): a generated
# tree of 100 directories of 100 files and 100 symlinks each (20,000
# entries, half of them symlinks: an icon theme's or node_modules/.bin's
# shape), served twice with the immutable mount options (nocto,actimeo=3600)
# and walked cold with `find -type f`: once as gitnfs serves by default,
# where READDIRPLUS lists a symlink without attributes and find's lstat costs
# one LOOKUP per symlink, and once with --symlink-attrs, where it costs none.
# Each run is e2e/run.sh's find_type_f (every check of that suite holds);
# then, from the client's census:
#   default:         LOOKUP within 1% of one per symlink
#   --symlink-attrs: LOOKUP at most 1% of the symlinks (the floor is 0)
# and the two RPC totals side by side.
#
#   e2e/symlinks.sh [--only default|attrs] [--timeout SEC]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
ONLY="" TIMEOUT=600
DIRS=100 PER=100
while (($#)); do
  case $1 in
    --only) ONLY=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    *) echo "symlinks.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d /tmp/gitnfs-symlinks-e2e.XXXXXX)
trap 'rm -rf "$WORK/repo" "$WORK/bin"' EXIT
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/gitnfs" ./cmd/gitnfs)
BIN=$WORK/bin/gitnfs

# The tree, written with git fast-import (deterministic: fixed dates and
# names): dNNN/fNNN.txt (distinct small blobs) and dNNN/lNNN -> fNNN.txt.
REPO=$WORK/repo
git init -q --bare "$REPO"
{
  echo "commit refs/heads/main"
  echo "committer e2e <e2e@example.com> 1700000000 +0000"
  echo "data 9"
  echo "symlinks"
  for ((d = 0; d < DIRS; d++)); do
    for ((i = 0; i < PER; i++)); do
      printf -v body 'file %03d of dir %03d\n' "$i" "$d"
      printf 'M 100644 inline d%03d/f%03d.txt\ndata %d\n%s\n' "$d" "$i" "${#body}" "$body"
      printf -v target 'f%03d.txt' "$i"
      printf 'M 120000 inline d%03d/l%03d\ndata %d\n%s\n' "$d" "$i" "${#target}" "$target"
    done
  done
} | git -C "$REPO" fast-import --quiet
git -C "$REPO" symbolic-ref HEAD refs/heads/main
SYMLINKS=$((DIRS * PER))
echo "symlinks.sh: $DIRS directories of $PER files and $PER symlinks ($(git -C "$REPO" ls-tree -r HEAD | wc -l) entries) in $REPO" >&2

FAIL=0
fail() { echo "FAIL $*"; FAIL=1; }
pass() { echo "PASS $*"; }
# op COUNT from a run's census.txt ("workload=find_type_f op=LOOKUP count=N ...").
op() { awk -v op="$2" '$1 == "workload=find_type_f" && $2 == "op=" op { sub(/count=/, "", $3); print $3; f = 1 } END { if (!f) print 0 }' "$1/census.txt"; }
total() { awk '$1 == "workload=find_type_f" && $2 == "status=ok" { for (i = 3; i <= NF; i++) if ($i ~ /^total_rpcs=/) { sub(/total_rpcs=/, "", $i); print $i } }' "$1/census.txt"; }

declare -A LOOKUPS TOTALS
for mode in default attrs; do
  [[ -n $ONLY && $ONLY != "$mode" ]] && continue
  flag=""
  [[ $mode == attrs ]] && flag="--symlink-attrs"
  RC=0
  # Every symlink is a LOOKUP by design without the flag: the run's own
  # lookups/ check already excuses one per symlink, and with the flag the
  # stricter bound below applies. --max-readdir 2.01: Linux 6.1 reads each
  # of these 200-entry directories with two READDIRPLUS calls whatever the
  # server inlines (measured: 201 calls for 101 directories both ways; the
  # client keeps about 125 entries of a first reply of 200 and asks again
  # from there), so the suite's 1.002 does not apply to this shape.
  "$HERE/run.sh" --repo "$REPO" --workloads find_type_f --no-content-check --max-readdir 2.01 \
    --out "$WORK/$mode" --timeout "$TIMEOUT" \
    --server-cmd "$BIN serve --repo {repo} --rev {rev} --listen 127.0.0.1:{port} --no-git-dir $flag" \
    -- --opts nocto,actimeo=3600 > "$WORK/$mode.txt" 2>&1 || RC=$?
  grep -E '^(PASS|FAIL)|^e2e: (PASSED|FAILED)' "$WORK/$mode.txt" | sed "s/^/  [$mode] /"
  ((RC == 0)) || fail "run.sh/$mode             exit $RC (log: $WORK/$mode.txt)"
  LOOKUPS[$mode]=$(op "$WORK/$mode" LOOKUP)
  TOTALS[$mode]=$(total "$WORK/$mode")
done

if [[ -n ${LOOKUPS[default]:-} ]]; then
  lk=${LOOKUPS[default]}
  if ((lk * 100 >= SYMLINKS * 99 && lk * 100 <= SYMLINKS * 101)); then
    pass "lookups/default           $lk LOOKUP for $SYMLINKS symlinks (one each, as designed; total ${TOTALS[default]} RPCs)"
  else
    fail "lookups/default           $lk LOOKUP for $SYMLINKS symlinks, want one per symlink within 1%"
  fi
fi
if [[ -n ${LOOKUPS[attrs]:-} ]]; then
  lk=${LOOKUPS[attrs]}
  if ((lk * 100 <= SYMLINKS)); then
    pass "lookups/symlink-attrs     $lk LOOKUP for $SYMLINKS symlinks (limit $((SYMLINKS / 100)); total ${TOTALS[attrs]} RPCs)"
  else
    fail "lookups/symlink-attrs     $lk LOOKUP for $SYMLINKS symlinks, want at most 1% of them"
  fi
fi
if [[ -n ${TOTALS[default]:-} && -n ${TOTALS[attrs]:-} && ${TOTALS[attrs]} -gt 0 ]]; then
  echo "symlinks.sh: cold find -type f, nocto,actimeo=3600: ${TOTALS[default]} RPCs by default, ${TOTALS[attrs]} with --symlink-attrs ($(awk -v a="${TOTALS[default]}" -v b="${TOTALS[attrs]}" 'BEGIN { printf "%.1f", a / b }')x fewer)"
fi
((FAIL == 0)) || { echo "symlinks.sh: FAILED (logs in $WORK)"; exit 1; }
echo "symlinks.sh: PASSED"
