# e2e/merge-git/guest.sh — run by the guest's /init (the script workload
# of e2e/merge-git.sh) with busybox sh, as root; git runs as uid 1000
# (/init runas). $1 is mount A (--merge --overlay), MNT_B and MNT_D mounts
# B and D (the same, fresh overlays), MNT_C mount C (--merge, read-only);
# each serves
# `--rev HEAD --merge theirs` of the repository that e2e/merge-git.sh
# shares at its host path, HEAD at ours. Prints RESULT NAME ok|FAIL DETAIL
# lines, OPS and TIME lines (e2e/git/common.sh); the host judges.
set -u
A=$1
B=$MNT_B
C=$MNT_C
D=$MNT_D
. /extra/common.sh

git_mounts "$A" "$B" "$C" "$D"

# The census: the first status on a fresh merge mount (C's .git was read
# above, as git's first read would: that made its index).
measured c-first "$C" "$C" status --porcelain=v2

# The reference: a checkout of ours on the guest's disk, and git merge.
OURS=$(cd "$COMMON" && g rev-parse ours)
THEIRS=$(cd "$COMMON" && g rev-parse theirs)
(cd "$COMMON" && g worktree add -q --detach "$REF" "$OURS") > "$O/worktree-add" 2>&1 \
  || { bad worktree-add "$(head -c 300 "$O/worktree-add")"; exit 1; }
(cd "$REF" && g merge --no-commit theirs) > "$O/ref-merge" 2>&1
echo "guest: git merge --no-commit theirs in the checkout exited $?: $(tr '\n' '|' < "$O/ref-merge" | head -c 400)"

IN=$A
got=$(cd "$A" && g rev-parse HEAD)
[ "$got" = "$OURS" ] && ok a/head "HEAD is ours ${OURS%????????????????????????????}" || bad a/head "HEAD is '$got', want ours $OURS"
got=$(cd "$A" && g rev-parse MERGE_HEAD)
[ "$got" = "$THEIRS" ] && ok a/merge-head "MERGE_HEAD is theirs" || bad a/merge-head "MERGE_HEAD is '$got', want theirs $THEIRS"
compare a/status status --porcelain=v2
n=$(grep -c '^u ' "$O/a_status.mount")
[ "$n" -ge 3 ] && ok a/unmerged "$n unmerged paths: $(grep '^u ' "$O/a_status.mount" | awk '{ print $2, $NF }' | tr '\n' ' ')" \
  || bad a/unmerged "$n unmerged paths, want 3 or more: $(tr '\n' '|' < "$O/a_status.mount" | head -c 300)"
compare a/ls-files ls-files --stage
compare a/diff diff
compare a/diff-cached diff --cached
for d in "$A" "$REF"; do
  (cd "$d" && as_user 'cat "$(/usr/bin/git rev-parse --git-path MERGE_MSG)"') > "$O/msg.$(basename "$d")" 2>&1
done
same a/merge-msg "$O/msg.$(basename "$A")" "$O/msg.ref"

# The same resolution in both, the status after each step the same: the
# content conflict by an editor-like write (truncate and write) and git
# add, the modify/delete by git rm (theirs' deletion), the rename/rename
# by keeping ours' name.
step() { # step NAME SHELL-COMMAND: in A and in REF, output and status compared
  for d in "$A" "$REF"; do
    (cd "$d" && as_user "$2; echo \"exit \$?\"; /usr/bin/git status --porcelain=v2") > "$O/$1.$(basename "$d")" 2>&1
  done
  same "a/$1" "$O/$1.$(basename "$A")" "$O/$1.ref"
}
step resolve-conf 'printf "resolved by hand\n" > conf.txt && /usr/bin/git add conf.txt'
step resolve-md '/usr/bin/git rm -q md.txt'
step resolve-ren '/usr/bin/git add ren-ours.txt && /usr/bin/git rm -q ren-theirs.txt && /usr/bin/git rm -q --cached ren.txt'
for d in "$A" "$REF"; do
  (cd "$d" && g commit -q --no-edit) > "$O/commit.$(basename "$d")" 2>&1 \
    || bad "run/commit$d" "$(head -c 300 "$O/commit.$(basename "$d")")"
done
compare a/commit rev-parse HEAD "HEAD^{tree}" HEAD^1 HEAD^2
compare a/parents rev-list --parents -n1 HEAD
echo "PARENTS $(cd "$A" && g rev-parse HEAD^1 HEAD^2 | tr '\n' ' ' | sed 's/ $//')"
compare a/after-commit status --porcelain=v2 --branch

# B: git merge --abort, D: git reset --hard, each return its mount to ours.
back() { # back TAG MOUNT GIT-ARGS...
  t=$1 m=$2
  shift 2
  (cd "$m" && g "$@") > "$O/$t-back" 2>&1 && ok "$t/back" "git $*" || bad "$t/back" "git $*: exit $?: $(head -c 300 "$O/$t-back")"
  (cd "$m" && g status --porcelain=v2) > "$O/$t-status" 2>&1
  [ ! -s "$O/$t-status" ] && ok "$t/status-clean" || bad "$t/status-clean" "$(tr '\n' '|' < "$O/$t-status" | head -c 300)"
  got=$(cd "$m" && g rev-parse HEAD)
  [ "$got" = "$OURS" ] && ok "$t/head" "HEAD is ours" || bad "$t/head" "HEAD is '$got', want ours $OURS"
  [ ! -e "$(cd "$m" && g rev-parse --git-path MERGE_HEAD)" ] && ok "$t/no-merge-head" || bad "$t/no-merge-head" "MERGE_HEAD is still there"
  # Every file's bytes (hashed from the worktree, not from the index's
  # stat data) and the tree's names: ours'. git diff ours without the
  # fsmonitor (git 2.39 lists fsmonitor-valid files deleted at random
  # there: e2e/git/guest.sh).
  (cd "$m" && as_user '/usr/bin/git -c core.fsmonitor= diff ours; /usr/bin/git ls-tree -r --name-only ours | while read -r p; do echo "$(/usr/bin/git hash-object "$p") $p"; done') > "$O/$t-files" 2>&1
  (cd "$m" && g ls-tree -r ours | awk -F '\t' '{ split($1, m, " "); print m[3], $2 }') > "$O/$t-ours" 2>&1
  same "$t/files-ours" "$O/$t-files" "$O/$t-ours"
}
back b "$B" merge --abort
back d "$D" reset -q --hard
exit 0
