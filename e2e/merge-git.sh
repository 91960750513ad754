#!/usr/bin/env bash
# e2e/merge-git.sh — the merge view finished with git, through the Linux
# 6.1 kernel client (issue 22's proof; also run by `make e2e`).
#
# Makes a small history with git (a content conflict, a modify/delete, a
# rename/rename, files merged cleanly, one of them changed on both sides),
# owned by uid 1000, with the repository's HEAD at ours, and serves
# `--rev HEAD --merge theirs` as that user (as e2e/git.sh serves: the .git
# file on, git 2.39 in the guest, the repository shared at its host path)
# four times: A, B and D with --overlay (fresh directories), C read-only.
# e2e/merge-git/guest.sh, git always as uid 1000:
#   - the first `git status` on C, with the mount's per-op counts;
#   - a checkout of ours on the guest's disk (git worktree add --detach)
#     and `git merge --no-commit theirs` there: A's status --porcelain=v2,
#     ls-files --stage, diff (the combined diff), diff --cached and
#     MERGE_MSG equal the checkout's;
#   - the same resolution in both (an editor-like write of the conflicted
#     file and git add, git rm of the modify/delete, git add/rm of the
#     rename), the status after each step, and git commit --no-edit: the
#     same commit (tree, parents, id: the dates are fixed);
#   - on B git merge --abort, on D git reset --hard: a clean status, HEAD
#     at ours, no MERGE_HEAD, every file's bytes ours'.
# The host asserts those and C's census: the first status READs no more
# files than git merge-tree conflicts plus the .gitignore files, and C's
# server ran one content merge per path both sides changed.
#
#   e2e/merge-git.sh [--keep] [--serve-args "ARGS"]
# --serve-args: more flags for the four servers (to watch a check go red,
# e.g. "--conflict-style merge": markers git's diff3 checkout does not write).
# Environment: GITNFS_BIN=path skips the build, LINUX_CLIENT_BUILD as for
# run.sh. Exit: 0 all passed; 1 a check failed; 2 usage or setup error.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
. "$HERE/lib.sh"
SUITE=merge-git.sh KEEP=0 SERVE_ARGS=""
while (($#)); do
  case $1 in
    --keep) KEEP=1; shift ;;
    --serve-args) SERVE_ARGS=$2; shift 2 ;;
    *) echo "merge-git.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
T0=$SECONDS

WORK=$(mktemp -d /tmp/gitnfs-merge-git-e2e.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  ((KEEP)) || rm -rf "$WORK/repo" "$WORK/bin" "$WORK/extra" "$WORK/extra.cpio" "$WORK/out/vm/initrd.cpio" "$WORK/state"
}
trap cleanup EXIT

"$HERE/linux-client/setup.sh" >&2 || die "linux-client/setup.sh failed"
mkdir -p "$WORK/bin" "$WORK/out"
(cd "$ROOT" && go build -o "$WORK/bin/census" ./e2e/census) || die "go build of e2e/census failed"
e2e_gitnfs
[[ $BIN == "$WORK/bin/gitnfs" ]] || { cp "$BIN" "$WORK/bin/gitnfs"; BIN=$WORK/bin/gitnfs; }

# The history, made by git: base, then ours and theirs from it.
REPO=$WORK/repo
export GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@example.com GIT_AUTHOR_DATE='1700000000 +0000'
export GIT_COMMITTER_NAME=e2e GIT_COMMITTER_EMAIL=e2e@example.com GIT_COMMITTER_DATE='1700000000 +0000'
h() { git -C "$REPO" "$@"; }
lines() { seq 1 12 | sed "s|^|$1 line |"; }
git init -q -b main "$REPO"
# diff3 markers, as gitnfs serves by default, for git merge in the
# guest's checkout too.
h config merge.conflictStyle diff3
mkdir -p "$REPO/src/lib" "$REPO/docs" "$REPO/build"
for f in conf.txt both.txt md.txt ren.txt ours-only.txt theirs-only.txt src/a.c src/b.c src/lib/c.c docs/guide.md docs/notes.md; do
  lines "$f" > "$REPO/$f"
done
printf '*.o\n' > "$REPO/.gitignore"
printf '*.tmp\n' > "$REPO/build/.gitignore"
lines keep > "$REPO/build/keep.txt"
h add -A && h commit -q -m base
h branch theirs
# edit FILE LINE TEXT: line LINE of FILE becomes TEXT.
edit() { awk -v n="$2" -v t="$3" 'NR == n { print t; next } { print }' "$REPO/$1" > "$REPO/$1.new" && mv "$REPO/$1.new" "$REPO/$1"; }
h checkout -q -b ours main
edit conf.txt 5 "ours changed line 5"      # content conflict
edit both.txt 1 "ours changed line 1"      # both sides, merged cleanly
edit md.txt 3 "ours keeps md.txt"          # modify/delete
h mv ren.txt ren-ours.txt                  # rename/rename
edit ours-only.txt 2 "ours only"
edit src/lib/c.c 7 "ours in a subdirectory"
echo "added by ours" > "$REPO/docs/added-ours.md"
h add -A && h commit -q -m ours
h checkout -q theirs
edit conf.txt 5 "theirs changed line 5"
edit both.txt 12 "theirs changed line 12"
h rm -q md.txt
h mv ren.txt ren-theirs.txt
edit theirs-only.txt 2 "theirs only"
edit src/a.c 1 "theirs in src"
echo "added by theirs" > "$REPO/added-theirs.txt"
h add -A && h commit -q -m theirs
# The repository's HEAD (its own checkout) at ours: served as --rev HEAD,
# so that the served markers say HEAD, as git merge's in a checkout do.
h checkout -q ours
OURS=$(h rev-parse ours) THEIRS=$(h rev-parse theirs) BASE=$(h merge-base ours theirs)
# What git says of this merge: its conflicted paths, and the paths both
# sides changed in place (the ones whose content must be merged).
set +e
CONFLICTED=$(h merge-tree --write-tree --name-only ours theirs | sed -n '2,/^$/p' | grep -c .)
set -e
BOTH=$(comm -12 <(h diff --name-only --no-renames --diff-filter=M "$BASE" ours | sort) \
  <(h diff --name-only --no-renames --diff-filter=M "$BASE" theirs | sort) | tr '\n' ' ')
NBOTH=$(wc -w <<< "$BOTH")
IGNORES=$(h ls-tree -r --name-only HEAD | grep -c -E '(^|/)\.gitignore$' || true)
((CONFLICTED >= 4 && NBOTH == 2)) || die "the history is not the one meant: $CONFLICTED conflicted paths, both sides changed: $BOTH"
echo "merge-git.sh: ours ${OURS:0:12}, theirs ${THEIRS:0:12}: $CONFLICTED conflicted paths (git merge-tree), both sides changed $BOTH" >&2
install -d -o $USER_ID -g $GROUP_ID "$WORK/state" "$WORK/state/home"
chown -R $USER_ID:$GROUP_ID "$REPO"

e2e_git_archive "$HERE/merge-git/guest.sh" "rm mkdir cmp diff sha1sum seq stat awk sed cut tr head chown chmod ln mv id cat"

declare -A PORT SPID
e2e_ports a b c d
# shellcheck disable=SC2086
e2e_serve_as_user a $SERVE_ARGS --rev HEAD --merge theirs --overlay "$WORK/state/ov-a"
# shellcheck disable=SC2086
e2e_serve_as_user b $SERVE_ARGS --rev HEAD --merge theirs --overlay "$WORK/state/ov-b"
# shellcheck disable=SC2086
e2e_serve_as_user c $SERVE_ARGS --rev HEAD --merge theirs
# shellcheck disable=SC2086
e2e_serve_as_user d $SERVE_ARGS --rev HEAD --merge theirs --overlay "$WORK/state/ov-d"
e2e_wait_up a b c d

echo "merge-git.sh: [$((SECONDS - T0))s] booting the guest: git finishes the merge in mount A, aborts it in B, resets it in D" >&2
HRC=0
"$HERE/linux-client/run.sh" --no-setup --no-count --port "${PORT[a]}" --workloads script \
  --extra-cpio "$WORK/extra.cpio" --script /extra/run.sh --mount "b=${PORT[b]}" --mount "c=${PORT[c]}" --mount "d=${PORT[d]}" \
  --share "$REPO" --mem 1024 \
  --outdir "$WORK/out/vm" --timeout 600 --workload-timeout 500 --label "merge-git" \
  > "$WORK/out/census.txt" 2> "$WORK/out/harness.stderr" || HRC=$?

e2e_stop a b c d
e2e_git_report $HRC

e2e_check as-user a/head a/merge-head a/status a/unmerged a/ls-files a/diff a/diff-cached a/merge-msg \
  a/resolve-conf a/resolve-md a/resolve-ren a/commit a/parents a/after-commit \
  b/back b/status-clean b/head b/no-merge-head b/files-ours d/back d/status-clean d/head d/no-merge-head d/files-ours
while read -r _ name _ rest; do fail "$name $rest"; done < <(grep -E '^RESULT run/.* FAIL' "$G" || true)
got=$(sed -n 's/^PARENTS //p' "$G")
[[ $got == "$OURS $THEIRS" ]] && pass "merge-commit             the mount's merge commit has parents ours ${OURS:0:12} and theirs ${THEIRS:0:12}" \
  || fail "merge-commit             the mount's merge commit has parents '$got', want $OURS $THEIRS"

# C's census: the first git status on a fresh merge mount.
read -r t r ops < <(e2e_ops_delta c-first)
echo "==== census of the first git status on a fresh merge mount (C) ===="
echo "c-first    ${t:-?} RPCs in $(sed -n 's/^TIME c-first \([0-9]*\) .*/\1/p' "$G") ms:${ops:-}"
if ! grep -q "^TIME c-first [0-9]* rc=0\$" "$G"; then
  fail "census/c-first           git status failed: $(grep -m1 '^TIME c-first ' "$G")"
else
  max=$((CONFLICTED + IGNORES))
  ((r <= max)) && pass "no-read/c-first          $r READs ≤ $CONFLICTED conflicted + $IGNORES .gitignore files: no unconflicted file read" \
    || fail "no-read/c-first          $r READs, more than $CONFLICTED conflicted + $IGNORES .gitignore files: git read unconflicted files"
fi
merges=$(awk '$1 == "ContentMerges" { print $2; exit }' "$WORK/out/c.stderr")
[[ $merges == "$NBOTH" ]] && pass "content-merges/c         C's server ran $merges content merges: one per path both sides changed ($BOTH)" \
  || fail "content-merges/c         C's server ran '${merges}' content merges, want $NBOTH (one per path both sides changed: $BOTH)"
e2e_kernel_log
echo "merge-git.sh: whole suite $((SECONDS - T0))s; logs in $WORK/out"
if ((FAIL)); then echo "merge-git.sh: FAILED"; exit 1; fi
echo "merge-git.sh: PASSED"
