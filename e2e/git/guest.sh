# e2e/git/guest.sh — run by the guest's /init (the script workload of
# e2e/git.sh) with busybox sh, as root; git runs as uid 1000 (/init runas).
# $1 is the read-only export's mount, MNT_OV the overlay export's; both
# serve the same commit of the repository that e2e/git.sh shares with the
# guest at its host path (run.sh --share); the gitnfs binary the fsmonitor
# hook runs comes in the archive (/extra/gitnfs) and is put at its host
# path. Prints RESULT NAME ok|FAIL DETAIL lines, OPS lines
# (the mount's per-op counts before and after a measured command) and
# TIME lines (its wall milliseconds); the host judges.
set -u
RO=$1
OV=$MNT_OV
. /extra/common.sh

git_mounts "$RO" "$OV"

# The first statuses on fresh mounts (read-only, then overlay), one right
# after each, and a third on the overlay 65 s later (every attribute the
# client holds has expired: acregmax and acdirmax are 60 s).
measured ro-first "$RO" "$RO" status --porcelain=v2
measured ro-second "$RO" "$RO" status --porcelain=v2
measured ov-first "$OV" "$OV" status --porcelain=v2
measured ov-second "$OV" "$OV" status --porcelain=v2
t65=$(ms)

# The reference: a real checkout of the same commit on the guest's own
# disk (tmpfs), made by git worktree add --detach.
HEAD=$(cd "$RO" && g rev-parse HEAD)
echo "HEAD $HEAD"
t0=$(ms)
(cd "$COMMON" && g worktree add -q --detach "$REF" "$HEAD") > "$O/worktree-add" 2>&1 \
  || { bad worktree-add "$(head -c 300 "$O/worktree-add")"; exit 1; }
echo "TIME worktree-add $(($(ms) - t0)) rc=0"
measured ref-first - "$REF" status --porcelain=v2
measured ref-second - "$REF" status --porcelain=v2

IN=$RO
compare ro/rev-parse rev-parse HEAD
compare ro/status status --porcelain=v2 --branch
compare ro/describe describe --always --dirty
compare ro/log log -1
compare ro/ls-files ls-files -s
# diff-index HEAD (and diff HEAD) without the fsmonitor: git 2.39's
# run_diff_index lists clean files as deleted at random when the index
# marks them fsmonitor-valid (measured on the host, no gitnfs: 11 of 200
# runs of git diff-index HEAD in a clean checkout with a hook answering
# "nothing changed", 0 of 200 without the hook; diff, diff-files and status
# 0). Without it git lstats every file: the stricter check anyway.
compare ro/diff-index -c core.fsmonitor= diff-index HEAD
# listed FILE DIR: how many paths diff-index listed in FILE, and what
# the client says of the first one in DIR now (an intermittent failure
# listed tracked files as deleted: to tell a failed lstat from a stale one).
listed() {
  first=$(head -1 "$1" | cut -f2)
  echo "$(grep -c . "$1") paths listed; now: $(cd "$2" && as_user "ls -ln '$first'" 2>&1 | head -c 200); first: $(head -c 200 "$1")"
}
[ -s "$O/ro_diff-index.mount" ] && bad ro/diff-index-empty "$(listed "$O/ro_diff-index.mount" "$RO")" || ok ro/diff-index-empty
echo "LSFILES $(wc -l < "$O/ro_ls-files.mount")"

# A read-only export: a git command that writes files fails with EROFS.
for c in "mv README.md README.moved" "rm -q README.md"; do
  (cd "$RO" && g $c) > "$O/erofs" 2>&1
  rc=$?
  if [ $rc != 0 ] && grep -q "Read-only file system" "$O/erofs"; then ok "ro/erofs/${c%% *}" "exit $rc: $(head -1 "$O/erofs")"
  else bad "ro/erofs/${c%% *}" "exit $rc: $(head -c 300 "$O/erofs")"; fi
done

# The overlay 65 s after its second status.
while [ $(($(ms) - t65)) -lt 65000 ]; do sleep 1; done
measured ov-65s "$OV" "$OV" status --porcelain=v2
measured ref-65s - "$REF" status --porcelain=v2

# The same changes in the overlay mount and in the checkout: modify, add,
# delete, rename, chmod +x, a symlink, a new ignored file (by a pattern
# added to .gitignore).
# Two plain names (no quoting needed) of files of mode 100644: one at the
# root, one below.
pick() { awk -F '\t' -v deep="$1" '{ split($1, m, " ") } m[1] == "100644" && $2 ~ /^[A-Za-z0-9_][A-Za-z0-9._\/-]*$/ &&
  ($2 ~ /\//) == deep && $2 !~ /^(README.md|Makefile|\.gitignore)$/ { print $2; exit }' "$O/ro_ls-files.mount"; }
plain=$(pick 0)
gone=$(pick 1)
[ -n "$plain" ] && [ -n "$gone" ] || bad pick "no plain file names in $O/ro_ls-files.mount"
echo "guest: chmod +x $plain, rm $gone"
for d in "$OV" "$REF"; do
  as_user "cd '$d' && echo changed >> README.md && echo new > added.txt && rm '$gone' &&
    mv Makefile Makefile.renamed && chmod +x '$plain' && ln -s README.md readme-link &&
    printf '\n*.o\n' >> .gitignore && mkdir obj && echo x > obj/a.o" > "$O/change" 2>&1 \
    || bad "change/$d" "$(head -c 300 "$O/change")"
done
IN=$OV
compare ov/status status --porcelain=v2 --branch
compare ov/status-ignored status --porcelain=v2 --ignored
compare ov/diff diff
grep -q '^? added.txt' "$O/ov_status.mount" && grep -q '^! obj/' "$O/ov_status-ignored.mount" \
  && ok ov/status-shows-changes "$(grep -c '^[12] ' "$O/ov_status.mount") changed, $(grep -c '^?' "$O/ov_status.mount") untracked, obj/ ignored" \
  || bad ov/status-shows-changes "$(grep '^[?!]' "$O/ov_status-ignored.mount" | tr '\n' '|' | head -c 300)"

# git add -A and git commit in both: the same tree (and, same dates, the
# same commit).
for d in "$OV" "$REF"; do
  (cd "$d" && g add -A && g commit -q -m "e2e change") > "$O/commit" 2>&1 \
    || bad "commit/$d" "$(head -c 300 "$O/commit")"
done
compare ov/commit rev-parse HEAD "HEAD^{tree}"
compare ov/after-commit status --porcelain=v2 --branch
echo "TREE $(cd "$OV" && g rev-parse "HEAD^{tree}")"
(cd "$OV" && g -c core.fsmonitor= diff-index HEAD) > "$O/di" 2>&1
[ -s "$O/di" ] && bad ov/clean-after-commit "$(listed "$O/di" "$OV")" || ok ov/clean-after-commit

# git stash (and pop), git restore, git reset --hard: the same steps in
# the overlay mount and in the checkout, one after the other (refs/stash
# is the repository's, shared by both), the status after each the same.
steps() { # steps DIR TAG
  as_user "cd '$1' && echo stash-me >> README.md && echo more >> added.txt && rm LICENSE" > "$O/$2_change" 2>&1
  (cd "$1" && g stash -q && g status --porcelain=v2 && echo "stash list: $(g stash list | wc -l)") > "$O/$2_stash" 2>&1
  (cd "$1" && g stash pop -q && g status --porcelain=v2 && g diff) > "$O/$2_pop" 2>&1
  (cd "$1" && g restore README.md && g status --porcelain=v2) > "$O/$2_restore" 2>&1
  (cd "$1" && g reset -q --hard HEAD && g status --porcelain=v2 --branch && g -c core.fsmonitor= diff-index HEAD) > "$O/$2_reset" 2>&1
}
steps "$OV" ov
steps "$REF" ref
for s in stash pop restore reset; do same "ov/$s" "$O/ov_$s" "$O/ref_$s"; done
grep -q '^stash list: 1$' "$O/ov_stash" && [ "$(grep -c '^[12?] ' "$O/ov_pop")" = 3 ] && [ "$(grep -c '^[12?] ' "$O/ov_reset")" = 0 ] \
  && ok ov/stash-steps "stash cleaned the mount, pop brought back 3 changes, reset --hard left none" \
  || bad ov/stash-steps "$(cat "$O/ov_stash" "$O/ov_pop" "$O/ov_reset" | tr '\n' '|' | head -c 400)"
exit 0
