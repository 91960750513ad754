#!/usr/bin/env bash
# The merge view under the real kernel client: every file read through the
# mount of `gitnfs serve --rev ours --merge theirs` must equal what git
# merge-tree writes for the same merge.
#
#   e2e/merge-view.sh [--shape tiny|full] [--keep]
#
# It generates the e2e repository, makes two branches from it with edits of
# every kind the merge view handles (changed on one side, on both sides
# cleanly, conflicting, add/add, modify/delete, mode clashes, renames on
# either side and both, on a criss-cross history with two merge bases),
# commits git merge-tree's result tree as "merged",
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
((${#FILES[@]} >= 19)) || { echo "merge-view.sh: only ${#FILES[@]} text files to edit" >&2; exit 1; }

# branch NAME PARENTS EDITS...: a commit whose parents are PARENTS (space
# separated; the first one's tree is edited), where an edit is
# "line|PATH|N|TEXT" (replace line N), "top|PATH|TEXT" (prepend),
# "end|PATH|TEXT" (append), "rm|PATH", "add|PATH|TEXT", "chmod|PATH" or
# "mv|PATH|NEWPATH" (a rename, content unchanged).
branch() {
  local name=$1 parents=$2; shift 2
  local first=${parents%% *}
  local idx=$WORK/index.$name
  GIT_INDEX_FILE=$idx git -C "$REPO" read-tree "$first"
  for e in "$@"; do
    IFS='|' read -r op p a b <<<"$e"
    case $op in
      line) id=$(g cat-file -p "$first:$p" | awk -v n="$a" -v t="$b" 'NR==n{print t; next}{print}' | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100644,$id,$p" ;;
      top)  id=$( { printf '%s\n' "$a"; g cat-file -p "$first:$p"; } | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100644,$id,$p" ;;
      end)  id=$( { g cat-file -p "$first:$p"; printf '%s\n' "$a"; } | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100644,$id,$p" ;;
      rm)   GIT_INDEX_FILE=$idx git -C "$REPO" update-index --force-remove "$p" ;;
      add)  id=$(printf '%s\n' "$a" | g hash-object -w --stdin)
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --add --cacheinfo "100644,$id,$p" ;;
      chmod) id=$(g rev-parse "$first:$p"); GIT_INDEX_FILE=$idx git -C "$REPO" update-index --cacheinfo "100755,$id,$p" ;;
      mv)   id=$(g rev-parse "$first:$p")
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --force-remove "$p"
            GIT_INDEX_FILE=$idx git -C "$REPO" update-index --add --cacheinfo "100644,$id,$a" ;;
    esac
  done
  local tree; tree=$(GIT_INDEX_FILE=$idx git -C "$REPO" write-tree)
  local ps=(); for x in $parents; do ps+=(-p "$x"); done
  g update-ref "refs/heads/$name" "$(g commit-tree "$tree" "${ps[@]}" -m "$name")"
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
# Renames (gitnfs detects them as merge-ort does): a change follows a
# renamed file, rename/rename and rename/delete conflict.
ours+=("mv|${F[14]}|moved/ours-renamed-14.txt"); theirs+=("line|${F[14]}|1|theirs edits a file ours renamed")
theirs+=("mv|${F[15]}|moved/theirs-renamed-15.txt"); ours+=("line|${F[15]}|1|ours edits a file theirs renamed")
ours+=("mv|${F[16]}|r1/both-16.txt"); theirs+=("mv|${F[16]}|r2/both-16.txt")
ours+=("mv|${F[18]}|gone/ours-18.txt"); theirs+=("rm|${F[18]}")
# A criss-cross history: x and y change F[17] differently, each side merged
# them its own way, so ours and theirs have two merge bases, which git (and
# gitnfs) merge into a virtual base first.
branch x HEAD "line|${F[17]}|1|x edits 17"
branch y HEAD "line|${F[17]}|1|y edits 17"
branch mx "x y"
branch my "y x"
branch ours mx "${ours[@]}"
branch theirs my "${theirs[@]}"
(($(g merge-base --all ours theirs | wc -l) == 2)) || { echo "merge-view.sh: not a criss-cross history" >&2; exit 1; }

set +e
# diff3 markers, as gitnfs serves by default.
MERGED_TREE=$(g -c merge.conflictStyle=diff3 merge-tree --write-tree ours theirs | head -1)
set -e
[[ $MERGED_TREE =~ ^[0-9a-f]{40}$ ]] || { echo "merge-view.sh: git merge-tree failed" >&2; exit 1; }
g update-ref refs/heads/merged "$(g commit-tree "$MERGED_TREE" -p ours -p theirs -m merged)"
echo "merge-view.sh: git merge-tree reports $(g merge-tree --write-tree --name-only ours theirs | sed -n '2,/^$/p' | grep -c .) conflicted paths" >&2
"$WORK/gitnfs" conflicts --repo "$REPO" --rev ours --merge theirs >&2 || true
# The conflicted set must be git's, renames and the virtual base included.
want=$(g -c merge.conflictStyle=diff3 merge-tree --write-tree --name-only ours theirs | sed -n '2,/^$/p' | grep . | sort || true)
got=$("$WORK/gitnfs" conflicts --name-only --repo "$REPO" --rev ours --merge theirs | sort || true)
[[ "$got" == "$want" ]] || { echo "merge-view.sh: gitnfs conflicts differs from git merge-tree --name-only:" >&2; diff <(echo "$want") <(echo "$got") >&2; exit 1; }

# Conflicted paths come back from READDIRPLUS without attributes by design,
# so the client LOOKUPs each: allow that many.
exec "$HERE/run.sh" --repo "$REPO" --rev merged --workloads find_type_f,cat_all --max-lookup 0.05 \
  --server-cmd "env JJ_VFS_STATS=1 $WORK/gitnfs serve --repo {repo} --rev ours --merge theirs --listen 127.0.0.1:{port} --no-git-dir"
