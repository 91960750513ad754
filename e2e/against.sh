#!/usr/bin/env bash
# e2e/against.sh — the kernel client's census and wall times, this tree's
# gitnfs against REV's, in one run (issue 23: "every RPC count of the census
# stays at the floor; the cold find's wall time against the previous commit").
#
# Builds gitnfs from the work tree and from REV (a detached `git worktree` in
# a temp dir), generates the full e2e tree once, then boots the Linux 6.1
# guest (e2e/run.sh, every workload on a fresh mount) for each binary in turn,
# ABBA... for ROUNDS rounds so that the drift of a shared machine falls on
# both. Prints, per workload, every op count of both (they must be equal: a
# difference fails the run) and the guest's wall time, median of the rounds,
# with the ratio here / REV. Wall times are TCG's: context, compared only side
# by side.
#
# usage: e2e/against.sh REV [--rounds N] [--workloads LIST] [--keep]
#   --rounds N        runs of each binary (default 3)
#   --workloads LIST  default find_type_f,ls_lR,du_s
# Exit: 0 the counts are equal; 1 a count differs or a run failed; 2 usage.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin LC_ALL=C

REV="" ROUNDS=3 WORKLOADS=find_type_f,ls_lR,du_s KEEP=0
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -*) echo "against.sh: unknown argument $1" >&2; exit 2 ;;
    *) [[ -z $REV ]] || { echo "against.sh: one REV only" >&2; exit 2; }; REV=$1; shift ;;
  esac
done
[[ -n $REV ]] || { echo "usage: e2e/against.sh REV [--rounds N] [--workloads LIST] [--keep]" >&2; exit 2; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "against.sh: --rounds must be a positive number" >&2; exit 2; }
OLD=$(git -C "$ROOT" rev-parse --verify --quiet "$REV^{commit}") ||
  { echo "against.sh: $REV is not a commit of $ROOT (git rev-parse); name a commit or branch" >&2; exit 2; }
HEADC=$(git -C "$ROOT" rev-parse --short HEAD)
[[ -z $(git -C "$ROOT" status --porcelain --untracked-files=no) ]] || HEADC="$HEADC+changes"

WORK=$(mktemp -d /tmp/gitnfs-against.XXXXXX)
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/old-src" 2>/dev/null || true
  ((KEEP)) || rm -rf "$WORK/repo" "$WORK/bin"
}
trap cleanup EXIT
mkdir -p "$WORK/bin" "$WORK/runs"
(cd "$ROOT" && go build -o "$WORK/bin/gitnfs-new" ./cmd/gitnfs && go build -o "$WORK/bin/genrepo" ./e2e/genrepo)
git -C "$ROOT" worktree add -q --detach "$WORK/old-src" "$OLD"
(cd "$WORK/old-src" && go build -o "$WORK/bin/gitnfs-old" ./cmd/gitnfs)
"$WORK/bin/genrepo" -o "$WORK/repo" -shape full -seed 1 > /dev/null

RUN_ARGS=()
[[ ,$WORKLOADS, == *,cat_all,* ]] || RUN_ARGS+=(--no-content-check)
FAILED=0
for ((r = 1; r <= ROUNDS; r++)); do
  order="new old"; ((r % 2)) || order="old new"
  for side in $order; do
    out=$WORK/runs/$side-$r
    echo "against.sh: round $r, $side" >&2
    if ! GITNFS_BIN=$WORK/bin/gitnfs-$side "$HERE/run.sh" --repo "$WORK/repo" --workloads "$WORKLOADS" "${RUN_ARGS[@]}" \
        --out "$out" > "$out.log" 2>&1; then
      echo "against.sh: the $side run of round $r failed (log: $out.log)" >&2
      FAILED=1
    fi
  done
done

python3 - "$WORK/runs" "$ROUNDS" "$HEADC" "${OLD:0:7}" "$WORKLOADS" <<'EOF' || FAILED=1
import json, statistics, sys
runs, rounds, here, there, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split(",")
def load(side, r):
    try:
        return {x["workload"]: x for x in json.load(open(f"{runs}/{side}-{r}/vm/census.json"))["results"]}
    except (OSError, ValueError, KeyError):
        return {}
res = {s: [load(s, r) for r in range(1, rounds + 1)] for s in ("new", "old")}
bad = 0
print(f"| workload | RPCs here ({here}) | RPCs at {there} | ops that differ | wall time here | at {there} | here / {there} |")
print("|---|---|---|---|---|---|---|")
for w in workloads:
    new = [x[w] for x in res["new"] if w in x]
    old = [x[w] for x in res["old"] if w in x]
    if len(new) < rounds or len(old) < rounds:
        print(f"| {w} | missing runs: {len(new)} here, {len(old)} there | | | | | |"); bad = 1; continue
    counts = lambda x: {op: v["count"] for op, v in x["ops"].items() if v["count"]}
    diff = sorted({op for a in new for b in old for op in set(counts(a)) | set(counts(b)) if counts(a).get(op) != counts(b).get(op)})
    # Within one side, op counts are stable run to run (BENCHMARKS.md row 1); across sides they must be equal.
    bad |= bool(diff)
    wn = statistics.median(x["wall_ms"] for x in new); wo = statistics.median(x["wall_ms"] for x in old)
    ratios = " ".join(f"{a['wall_ms'] / b['wall_ms']:.2f}" for a, b in zip(new, old))
    print(f"| {w} | {new[0]['total_rpcs']:,} | {old[0]['total_rpcs']:,} | {', '.join(diff) or 'none'} | "
          f"{wn / 1000:.2f} s | {wo / 1000:.2f} s | **{wn / wo:.2f}x** (rounds {ratios}) |")
sys.exit(bad)
EOF
echo
echo "Reproduce: e2e/against.sh $REV --rounds $ROUNDS --workloads $WORKLOADS (logs in $WORK/runs)"
((FAILED == 0)) || { echo "against.sh: FAILED (a run failed or an op count differs)"; exit 1; }
