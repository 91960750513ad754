#!/usr/bin/env bash
# e2e/git.sh — git inside the mount, through the Linux 6.1 kernel client
# (issue 21's proof; also run by `make e2e`).
#
# Generates the e2e tree (genrepo, as e2e/run.sh), owned by uid 1000, and
# serves it as that user (setpriv, as `sudo gitnfs mount` does) twice,
# with the `.git` file on (no --no-git-dir): read-only, and --overlay. The
# guest gets git 2.39 (the host's binary and its libraries), the
# repository shared at its host path over 9p (linux-client/run.sh
# --share: the `.git` file names a host path), the gitnfs binary (the
# fsmonitor hook is the serving binary, by its host path), and runs
# e2e/git/guest.sh,
# git always as uid 1000:
#   - the first `git status` on each fresh mount, one right after, one on
#     the overlay 65 s later: the client's RPCs of each (mountstats);
#   - a checkout of the same commit on the guest's disk (git worktree add
#     --detach): rev-parse, status, describe, log, ls-files -s, diff-index
#     of the read-only mount print the same as there, and its statuses
#     timed side by side;
#   - on the read-only mount, git mv and checkout-index fail with EROFS;
#   - the same changes in the overlay mount and in the checkout (modify,
#     add, delete, rename, chmod +x, symlink, ignored file): the same
#     status and diff; git add -A and git commit there make the same tree,
#     and the same tree as `gitnfs commit` of the overlay after the server
#     stopped; then git stash, stash pop, restore and reset --hard leave
#     the same status in both.
# The host asserts each of those, the census bounds (a first status reads
# no tracked file but the .gitignore files git reads by design; a later
# one costs at most 1% of the first's RPCs), and that both servers served
# the whole run.
#
#   e2e/git.sh [--shape full|tiny] [--keep] [--serve-args "ARGS"]
# --serve-args: more flags for both servers (to watch a check go red, e.g.
# "--uid 1001": git in the guest refuses a worktree it does not own).
# Environment: GITNFS_BIN=path skips the build, LINUX_CLIENT_BUILD as for
# run.sh. Exit: 0 all passed; 1 a check failed; 2 usage or setup error.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
. "$HERE/lib.sh"
SUITE=git.sh
SHAPE=full KEEP=0 SERVE_ARGS=""
while (($#)); do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --serve-args) SERVE_ARGS=$2; shift 2 ;;
    *) echo "git.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $SHAPE == full || $SHAPE == tiny ]] || die "--shape must be full or tiny"
T0=$SECONDS

WORK=$(mktemp -d /tmp/gitnfs-git-e2e.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  ((KEEP)) || rm -rf "$WORK/repo" "$WORK/bin" "$WORK/extra" "$WORK/extra.cpio" "$WORK/out/vm/initrd.cpio" "$WORK/state"
}
trap cleanup EXIT

"$HERE/linux-client/setup.sh" >&2 || die "linux-client/setup.sh failed"
mkdir -p "$WORK/bin" "$WORK/out"
(cd "$ROOT" && go build -o "$WORK/bin/census" ./e2e/census && go build -o "$WORK/bin/genrepo" ./e2e/genrepo) \
  || die "go build of e2e/census or e2e/genrepo failed"
e2e_gitnfs
[[ $BIN == "$WORK/bin/gitnfs" ]] || { cp "$BIN" "$WORK/bin/gitnfs"; BIN=$WORK/bin/gitnfs; }

# The repository and the server's state belong to the ordinary user.
REPO=$WORK/repo
"$WORK/bin/genrepo" -o "$REPO" -shape "$SHAPE" -seed 1 > "$WORK/out/genrepo.txt" || die "genrepo failed"
HEAD=$(git -C "$REPO" rev-parse HEAD)
FILES=$(git -C "$REPO" ls-tree -r HEAD | wc -l)
IGNORES=$(git -C "$REPO" ls-tree -r --name-only HEAD | grep -c -E '(^|/)\.gitignore$' || true)
install -d -o $USER_ID -g $GROUP_ID "$WORK/state" "$WORK/state/home"
chown -R $USER_ID:$GROUP_ID "$REPO"
ugit() { e2e_as_user git -C "$REPO" "$@"; }
echo "git.sh: $SHAPE tree, commit ${HEAD:0:12}, $FILES files ($IGNORES .gitignore)" >&2

# The guest's extra archive: the script, busybox applets, git, the user.
e2e_git_archive "$HERE/git/guest.sh" "rm mkdir cmp diff sha1sum seq stat awk sed cut tr head chown chmod ln mv id"

# Both servers run as the user, with the .git file (e2e_start's
# --no-git-dir left out), their census on.
declare -A PORT SPID
e2e_ports ro ov
# shellcheck disable=SC2086
e2e_serve_as_user ro $SERVE_ARGS
# shellcheck disable=SC2086
e2e_serve_as_user ov $SERVE_ARGS --overlay "$WORK/state/ov"
e2e_wait_up ro ov

MEM=1024 TIMEOUT=600
[[ $SHAPE == full ]] && MEM=2048 TIMEOUT=2400
echo "git.sh: [$((SECONDS - T0))s] booting the guest: git in a read-only and an overlay mount, and in a checkout" >&2
HRC=0
"$HERE/linux-client/run.sh" --no-setup --no-count --port "${PORT[ro]}" --workloads script \
  --extra-cpio "$WORK/extra.cpio" --script /extra/run.sh --mount "ov=${PORT[ov]}" \
  --share "$REPO" --mem "$MEM" \
  --outdir "$WORK/out/vm" --timeout "$TIMEOUT" --workload-timeout $((TIMEOUT - 100)) --label "git" \
  > "$WORK/out/census.txt" 2> "$WORK/out/harness.stderr" || HRC=$?

e2e_stop ro ov
e2e_git_report $HRC

for c in as-user ro/rev-parse ro/status ro/describe ro/log ro/ls-files ro/diff-index ro/diff-index-empty \
  ro/erofs/mv ro/erofs/rm ov/status ov/status-ignored ov/diff ov/status-shows-changes \
  ov/commit ov/after-commit ov/clean-after-commit ov/stash ov/pop ov/restore ov/reset ov/stash-steps; do
  e2e_check "$c"
done
while read -r _ name _ rest; do fail "$name $rest"; done < <(grep -E '^RESULT (run|change|commit)/.* FAIL' "$G" || true)
got=$(sed -n 's/^HEAD //p' "$G")
[[ $got == "$HEAD" ]] && pass "head                     the mount's HEAD is the served commit ${HEAD:0:12}" \
  || fail "head                     the mount's HEAD is '$got', want $HEAD"
got=$(sed -n 's/^LSFILES //p' "$G")
[[ $got == "$FILES" ]] && pass "index-entries            git ls-files -s in the mount lists the tree's $FILES files" \
  || fail "index-entries            git ls-files -s in the mount lists '$got', want $FILES"

# The overlay's commit, by git in the guest and by gitnfs commit here.
TREE=$(sed -n 's/^TREE //p' "$G")
if [[ -z $TREE ]]; then
  fail "gitnfs-commit            the guest reported no commit tree"
elif C=$(e2e_as_user \
  GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@example.com "$BIN" commit --overlay "$WORK/state/ov" -m "e2e change" 2> "$WORK/out/commit.stderr"); then
  want=$(ugit rev-parse "$C^{tree}")
  [[ $want == "$TREE" ]] && pass "gitnfs-commit            git commit in the mount made gitnfs commit's tree ${TREE:0:12}" \
    || fail "gitnfs-commit            git commit in the mount made tree $TREE, gitnfs commit $want: $(ugit diff --stat "$want" "$TREE" | tail -5 | tr '\n' '|')"
else
  fail "gitnfs-commit            gitnfs commit failed: $(head -c 300 "$WORK/out/commit.stderr")"
fi

# The census: each measured command's RPCs (after - before, per op).
ms() { sed -n "s/^TIME $1 \([0-9]*\) .*/\1/p" "$G"; }
echo "==== census (the client's RPCs per command; $FILES tracked files) ===="
declare -A TOTAL
for l in ro-first ro-second ov-first ov-second ov-65s; do
  read -r t r ops < <(e2e_ops_delta "$l")
  TOTAL[$l]=${t:-0}
  printf '%-10s %6s RPCs (%s per file) in %s ms:%s\n' "$l" "${t:-?}" "$(awk -v t="${t:-0}" -v f="$FILES" 'BEGIN { printf "%.3f", t / f }')" "$(ms "$l")" "${ops:-}"
  [[ -n $t ]] || { fail "census/$l             no counts"; continue; }
  # A status that failed (dubious ownership...) proves no bound.
  grep -q "^TIME $l [0-9]* rc=0\$" "$G" || { fail "census/$l        git status failed: $(grep -m1 "^TIME $l " "$G")"; continue; }
  if [[ $l == *-first ]]; then
    # Both indexes carry the fsmonitor's token (the overlay's: nothing is
    # in the overlay yet): git lstats no file. Each lstat on a fresh mount
    # is a LOOKUP, so a status that lstat'ed every file sends one a file.
    lookups=$(sed -n 's/.* LOOKUP=\([0-9]*\).*/\1/p' <<< " $ops")
    ((${lookups:-0} * 2 <= FILES)) && pass "fsmonitor/$l       ${lookups:-0} LOOKUPs for $FILES files: git lstat'ed none (the hook's answer held)" \
      || fail "fsmonitor/$l       ${lookups:-0} LOOKUPs for $FILES files: git lstat'ed them (fsmonitor not used)"
  fi
  case $l in
    *-first)
      # git reads each .gitignore it meets (dir.c add_patterns) on the
      # untracked scan: those are the only READs a first status may send.
      ((r <= IGNORES)) && pass "no-read/$l        $r READs (≤ the tree's $IGNORES .gitignore files): no tracked file's content read" \
        || fail "no-read/$l        $r READs, more than the tree's $IGNORES .gitignore files: git read tracked files" ;;
    *)
      first=${TOTAL[${l%%-*}-first]}
      # On the tiny tree 1% is a few RPCs; allow 5 there (the root's
      # GETATTR, .git's open).
      max=$((first / 100)); [[ $SHAPE == tiny ]] && ((max < 5)) && max=5
      ((t <= max)) && pass "census/$l        $t RPCs ≤ $max (1% of ${l%%-*}-first's $first)" \
        || fail "census/$l        $t RPCs > $max (1% of ${l%%-*}-first's $first)" ;;
  esac
done
echo "==== wall time, the mount against the checkout on the guest's disk (ms) ===="
for p in "ro-first ref-first" "ro-second ref-second" "ov-first ref-first" "ov-second ref-second" "ov-65s ref-65s"; do
  set -- $p
  awk -v a="$(ms "$1")" -v b="$(ms "$2")" -v n="$1/$2" 'BEGIN { if (b > 0) printf "%-22s %7d / %7d = %.2fx\n", n, a, b, a / b }'
done
echo "worktree add of the checkout: $(ms worktree-add) ms"
e2e_kernel_log
echo "git.sh: whole suite $((SECONDS - T0))s; logs in $WORK/out"
if ((FAIL)); then echo "git.sh: FAILED"; exit 1; fi
echo "git.sh: PASSED"
