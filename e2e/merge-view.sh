#!/usr/bin/env bash
# The merge view under the real kernel client: every file read through the
# mount of `gitnfs serve --rev ours --merge theirs` must equal what git
# merge-tree writes for the same merge.
#
#   e2e/merge-view.sh [--shape tiny|full] [--keep]
#
# It generates the e2e repository, makes two branches from it with edits of
# every kind the merge view handles (changed on one side, on both sides
# cleanly, conflicting, add/add, modify/delete, mode clashes; no renames, which
# gitnfs does not detect), commits git merge-tree's result tree as "merged",
# and runs e2e/run.sh with the server serving the merge and the expectation
# computed from "merged". The digests of cat_all then compare every byte and
# every mode with git's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHAPE=tiny
KEEP=0
while (($#)); do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "merge-view.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
WORK=$(mktemp -d /tmp/gitnfs-merge-e2e.XXXXXX)
cleanup() { if ((KEEP == 0)); then rm -rf "$WORK"; fi; }
trap cleanup EXIT
export GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@localhost GIT_COMMITTER_NAME=e2e GIT_COMMITTER_EMAIL=e2e@localhost
export GIT_AUTHOR_DATE=2024-05-01T00:00:00Z GIT_COMMITTER_DATE=2024-05-01T00:00:00Z

(cd "$ROOT" && go build -o "$WORK/genrepo" ./e2e/genrepo && go build -o "$WORK/gitnfs" ./cmd/gitnfs)
REPO=$WORK/repo
"$WORK/genrepo" -o "$REPO" -shape "$SHAPE" -seed 7 >&2
g() { git -C "$REPO" "$@"; }

# Text files of the base (no NUL), in a fixed order.
# Plain names only (the odd names of the e2e tree are covered by run.sh).
mapfile -t FILES < <(g ls-tree -r -z HEAD | tr '\0' '\n' | awk -F'\t' '$1 ~ /^100644 blob/ {print $2}' |
  grep -E '^[A-Za-z0-9_./-]+$' | head -400 | while read -r p; do
  if (($(g cat-file -p "HEAD:$p" | tr -d -c '\000' | wc -c) == 0)); then echo "$p"; fi; done | head -60)
((${#FILES[@]} >= 14)) || { echo "merge-view.sh: only ${#FILES[@]} text files to edit" >&2; exit 1; }

# branch NAME EDITS...: a commit on HEAD's tree with the given edits, where an
# edit is "line|PATH|N|TEXT" (replace line N), "top|PATH|TEXT" (prepend),
# "end|PATH|TEXT" (append), "rm|PATH", "add|PATH|TEXT" or "chmod|PATH".
branch() {
  local name=$1; shift
  local idx=$WORK/index.$name
  GIT_INDEX_FILE=$idx git -C "$REPO" read-tree HEAD
  for e in "$@"; do
    IFS='|' read -r op p a b <<<"$e"
    case $op in
      line) id=$(g cat-file -p "HEAD:$p" | awk -v n="$a" -v t="$b" 'NR==n{print t; next}{print}' | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100644,$id,$p" ;;
      top)  id=$( { printf '%s\n' "$a"; g cat-file -p "HEAD:$p"; } | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100644,$id,$p" ;;
      end)  id=$( { g cat-file -p "HEAD:$p"; printf '%s\n' "$a"; } | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100644,$id,$p" ;;
      rm)   GIT_INDEX_FILE=$idx git -C "$REPO" update-index --force-remove "$p" ;;
      add)  id=$(printf '%s\n' "$a" | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --add --cacheinfo "100644,$id,$p" ;;
      chmod) id=$(g rev-parse "HEAD:$p"); GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100755,$id,$p" ;;
    esac
  done
  local tree; tree=$(GIT_INDEX_FILE=$idx git -C "$REPO" write-tree)
  g update-ref "refs/heads/$name" "$(g commit-tree "$tree" -p HEAD -m "$name")"
}
F=("${FILES[@]}")
ours=() theirs=()
for i in 0 1; do ours+=("line|${F[i]}|1|ours only $i"); done                                   # ours only
for i in 2 3; do theirs+=("line|${F[i]}|1|theirs only $i"); done                          # theirs only
for i in 4 5 6; do ours+=("line|${F[i]}|1|ours $i"); theirs+=("line|${F[i]}|1|theirs $i"); done   # conflicts
for i in 7 8; do ours+=("top|${F[i]}|ours top $i"); theirs+=("end|${F[i]}|theirs bottom $i"); done # clean both
for i in 9; do ours+=("line|${F[i]}|1|same edit $i"); theirs+=("line|${F[i]}|1|same edit $i"); done       # identical
for i in 10 11; do ours+=("line|${F[i]}|1|ours keeps $i"); theirs+=("rm|${F[i]}"); done                      # modify/delete
for i in 12 13; do ours+=("chmod|${F[i]}"); theirs+=("line|${F[i]}|1|theirs content $i"); done              # mode + content
ours+=("add|added-both.txt|ours side" "add|added-ours.txt|only ours")
theirs+=("add|added-both.txt|theirs side" "add|added-theirs.txt|only theirs")
branch ours "${ours[@]}"
branch theirs "${theirs[@]}"

set +e
# diff3 markers, as gitnfs serves by default.
MERGED_TREE=$(g -c merge.conflictStyle=diff3 merge-tree --write-tree ours theirs | head -1)
set -e
g update-ref refs/heads/merged "$(g commit-tree "$MERGED_TREE" -p ours -p theirs -m merged)"
echo "merge-view.sh: git merge-tree reports $(g merge-tree --write-tree --name-only ours theirs | sed -n '2,/^$/p' | grep -c .) conflicted paths" >&2
"$WORK/gitnfs" conflicts --repo "$REPO" --rev ours --merge theirs >&2 || true

# Conflicted paths come back from READDIRPLUS without attributes by design,
# so the client LOOKUPs each: allow that many.
exec "$HERE/run.sh" --repo "$REPO" --rev merged --workloads find_type_f,cat_all --max-lookup 0.05 \
  --server-cmd "env JJ_VFS_STATS=1 $WORK/gitnfs serve --repo {repo} --rev ours --merge theirs --listen 127.0.0.1:{port}"
