#!/usr/bin/env bash
# Following a branch under the Linux kernel client (issue 7). gitnfs serves
# `main` of a generated repository with --follow --poll 1s; the guest's
# `follow` workload (linux-client/init/follow.go) reads every file, keeps one
# open, and signals the end of its first pass with a LOOKUP of a name that
# does not exist. The server wrapper sees that LOOKUP error in the server's
# census (--metrics-addr) and commits to main: K files get new content, one
# file only a new mode, .follow-marker is added, the rest stays. The guest
# waits for the marker, reads everything again and reports what changed.
# Then this script checks, against git:
#   follow/visible    the marker showed up within the host's reaction + poll
#                     (1 s) + the attribute timeout (actimeo=1) + slack
#   follow/fd         the fd opened before the switch still reads the same bytes
#   follow/mtime      files whose mtime changed == files the commit changed
#   follow/content    files whose bytes changed == files whose blob changed
#   follow/make       files newer than a stamp taken before the commit (what
#                     make rebuilds) == files the commit changed
#   follow/digest     every byte and mode read after the switch == the new commit
#   follow/stopped    the server shut down when run.sh stopped its wrapper
#
#   e2e/follow.sh [--shape tiny|full] [--k N] [--no-follow] [--slack-ms MS] [--keep]
# GITNFS_BIN=path serves with that binary instead of building ./cmd/gitnfs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin LC_ALL=C

POLL_MS=1000 ACTIMEO=1

if [[ ${1:-} == --serve ]]; then
  # internal: the server command run.sh starts.
  # ARGS: BIN PORT REPO MPORT K STATE FOLLOW(0|1)
  BIN=$2 PORT=$3 REPO=$4 MPORT=$5 K=$6 STATE=$7 FOLLOW=$8
  args=(serve --repo "$REPO" --rev main --listen "127.0.0.1:$PORT" --metrics-addr "127.0.0.1:$MPORT" --no-git-dir)
  ((FOLLOW)) && args+=(--follow --poll "${POLL_MS}ms")
  "$BIN" "${args[@]}" &
  spid=$!
  (
    trap 'exit 0' TERM
    # Wait (at most 600 s) for the guest's first failing LOOKUP: its first pass is done.
    for ((i = 0; i < 3000; i++)); do
      n=$(curl -sf "127.0.0.1:$MPORT/census.json" 2>/dev/null |
        jq '[.rpcs[] | select(.name | test("LOOKUP")) | .errors] | add // 0' 2>/dev/null || echo 0)
      ((n > 0)) && break
      sleep 0.2
    done
    ((n > 0)) || { echo "no signal from the guest" > "$STATE/commit.err"; exit 0; }
    t0=$(date +%s%N)
    export GIT_DIR=$REPO/.git GIT_INDEX_FILE=$STATE/index
    old=$(git rev-parse refs/heads/main)
    git read-tree "$old"
    # Regular files in byte order; the first stays (the guest keeps it open).
    files=() modes=() shas=()
    while IFS= read -r -d '' line; do
      meta=${line%%$'\t'*}
      read -r mode type sha <<< "$meta"
      [[ $mode == 100644 || $mode == 100755 ]] || continue
      files+=("${line#*$'\t'}") modes+=("$mode") shas+=("$sha")
    done < <(git ls-tree -r -z --full-tree "$old")
    mapfile -d '' order < <(for i in "${!files[@]}"; do printf '%s\t%s\0' "${files[i]}" "$i"; done | sort -z | sed -z 's/.*\t//')
    nf=${#order[@]}
    step=$(( (nf - 1) / (K + 2) )); ((step >= 1)) || step=1
    for ((j = 1; j <= K + 1 && j * step < nf; j++)); do
      i=${order[j * step]}
      p=${files[i]} mode=${modes[i]} sha=${shas[i]}
      if ((j <= K)); then # new content
        new=$({ git cat-file blob "$sha"; printf 'changed by e2e/follow.sh\n'; } | git hash-object -w --stdin)
        printf '%s %s\t%s\0' "$mode" "$new" "$p" | git update-index -z --index-info
      else # the mode only
        [[ $mode == 100644 ]] && nm=100755 || nm=100644
        printf '%s %s\t%s\0' "$nm" "$sha" "$p" | git update-index -z --index-info
      fi
    done
    m=$(printf 'the branch moved\n' | git hash-object -w --stdin)
    printf '100644 %s\t.follow-marker\0' "$m" | git update-index -z --index-info
    tree=$(git write-tree)
    new=$(GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@localhost GIT_COMMITTER_NAME=e2e GIT_COMMITTER_EMAIL=e2e@localhost \
      git commit-tree "$tree" -p "$old" -m "e2e/follow.sh: move main")
    git update-ref refs/heads/main "$new" "$old"
    t1=$(date +%s%N)
    echo "old=$old new=$new reaction_ms=$(((t1 - t0) / 1000000))" > "$STATE/commit.txt"
  ) &
  cpid=$!
  # `|| true`: under set -e a kill of the committer that already finished
  # (the usual case) failed the trap before it reached the server, which then
  # outlived the run (found by pgrep after a passing run).
  stop() { kill -TERM "$cpid" 2>/dev/null || true; kill -INT "$spid" 2>/dev/null || true; rc=0; wait "$spid" || rc=$?; exit "$rc"; }
  trap stop INT TERM
  wait "$spid"
  exit $?
fi

SHAPE=tiny K=5 FOLLOW=1 SLACK_MS=4000 KEEP=0
while (($#)); do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --k) K=$2; shift 2 ;;
    --no-follow) FOLLOW=0; shift ;;
    --slack-ms) SLACK_MS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "follow.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
WORK=$(mktemp -d /tmp/gitnfs-follow-e2e.XXXXXX)
((KEEP)) || trap 'rm -rf "$WORK/repo" "$WORK/bin"' EXIT
mkdir -p "$WORK/bin" "$WORK/state"
(cd "$ROOT" && go build -o "$WORK/bin/genrepo" ./e2e/genrepo && go build -o "$WORK/bin/census" ./e2e/census)
BIN=${GITNFS_BIN:-$WORK/bin/gitnfs}
[[ -n ${GITNFS_BIN:-} ]] || (cd "$ROOT" && go build -o "$BIN" ./cmd/gitnfs)
"$WORK/bin/genrepo" -o "$WORK/repo" -shape "$SHAPE" -seed 1 >&2
MPORT=$("$WORK/bin/census" freeport)

RC=0
"$HERE/run.sh" --repo "$WORK/repo" --rev main --workloads cat_all,follow --out "$WORK/out" \
  --allow-errors follow:LOOKUP \
  --server-cmd "$HERE/follow.sh --serve $BIN {port} {repo} $MPORT $K $WORK/state $FOLLOW" \
  -- --opts "actimeo=$ACTIMEO" || RC=$?

echo "==== follow: the guest against git ===="
FAIL=0
pass() { printf 'PASS %-16s %s\n' "$1" "$2"; }
failc() { printf 'FAIL %-16s %s\n' "$1" "$2"; FAIL=1; }
J=$WORK/out/vm/census.json
res() { jq -r --arg k "$1" '.results[] | select(.workload == "follow") | (.items[$k] // .strings[$k]) // empty' "$J" 2>/dev/null; }
if [[ ! -f $WORK/state/commit.txt ]]; then
  failc follow/commit "the host never committed ($(cat "$WORK/state/commit.err" 2>/dev/null || echo 'no signal'))"
  echo "follow.sh: FAILED (logs in $WORK/out)"; exit 1
fi
. <(tr ' ' '\n' < "$WORK/state/commit.txt" | sed 's/^/C_/')
echo "commit ${C_old:0:12} -> ${C_new:0:12}, the host committed ${C_reaction_ms} ms after the guest's signal"
G=$WORK/repo/.git
# What git says changed: every path (content or mode), and those whose blob changed.
all_z=$(git --git-dir "$G" diff-tree -r -z --name-only --no-renames "$C_old" "$C_new" | sort -z | sha256sum | cut -d' ' -f1)
content_z=$(git --git-dir "$G" diff-tree -r -z --no-renames "$C_old" "$C_new" |
  while IFS= read -r -d '' meta && IFS= read -r -d '' path; do
    read -r _ _ osha nsha _ <<< "$meta"; if [[ $osha != "$nsha" ]]; then printf '%s\0' "$path"; fi
  done | sort -z | sha256sum | cut -d' ' -f1)
nall=$(git --git-dir "$G" diff-tree -r -z --name-only --no-renames "$C_old" "$C_new" | tr -cd '\0' | wc -c)
"$WORK/bin/census" expect -repo "$WORK/repo" -rev "$C_new" > "$WORK/out/expect-new.json"

vis=$(res visible_ms); seen=$(res marker_seen)
limit=$((C_reaction_ms + POLL_MS + ACTIMEO * 1000 + SLACK_MS))
if [[ $seen == 1 && -n $vis ]] && ((vis <= limit)); then
  pass follow/visible "marker visible ${vis} ms after the signal (limit: reaction ${C_reaction_ms} + poll ${POLL_MS} + actimeo ${ACTIMEO}000 + slack ${SLACK_MS} = ${limit})"
else
  failc follow/visible "marker seen=${seen:-?} after ${vis:-?} ms (limit ${limit} ms)"
fi
if [[ $(res fd_read_ok) == 1 ]]; then
  pass follow/fd "$(res fd_bytes) bytes of $(res fd_path) read again through the fd opened before the switch"
else
  failc follow/fd "fd_read_ok=$(res fd_read_ok) ($(res fd_path))"
fi
cmp_set() { # name guest-digest want-digest count text
  if [[ $2 == "$3" ]]; then pass "$1" "$5: $4 files, the same set as git's"
  else failc "$1" "$5: $4 files, set digest ${2:-none} != git's $3"; fi
}
cmp_set follow/mtime "$(res mtime_changed_paths)" "$all_z" "$(res mtime_changed)" "mtime changed (git: $nall paths changed)"
cmp_set follow/content "$(res content_changed_paths)" "$content_z" "$(res content_changed)" "bytes changed"
cmp_set follow/make "$(res make_rebuild_paths)" "$all_z" "$(res make_rebuild)" "newer than the pre-commit stamp (make's rebuild set)"
wc=$(jq -r .content_sha256 "$WORK/out/expect-new.json"); wm=$(jq -r .meta_sha256 "$WORK/out/expect-new.json")
if [[ $(res content_sha256) == "$wc" && $(res meta_sha256) == "$wm" ]]; then
  pass follow/digest "every byte and mode after the switch equals ${C_new:0:12}"
else
  failc follow/digest "content $(res content_sha256) vs $wc, meta $(res meta_sha256) vs $wm"
fi
# run.sh stopped the wrapper with SIGINT; the server it started must be gone too.
if left=$(pgrep -f "^$BIN serve .*127.0.0.1:" | tr '\n' ' ') && [[ -n $left ]]; then
  failc follow/stopped "the server outlived the run (pid $left); killed"
  kill -KILL $left 2>/dev/null || true
elif grep -q 'gitnfs: shutting down' "$WORK/out/server.stderr"; then
  pass follow/stopped "the server shut down on the wrapper's SIGINT"
else
  failc follow/stopped "no 'gitnfs: shutting down' in $WORK/out/server.stderr"
fi
if ((FAIL)); then
  grep '^follow ' "$WORK/out/vm/results.txt" 2>/dev/null | head -40 || true
  echo "git's changed paths:"; git --git-dir "$G" diff-tree -r --no-renames "$C_old" "$C_new" | head -40
fi
((FAIL == 0 && RC == 0)) || { echo "follow.sh: FAILED (run.sh exit $RC; logs in $WORK/out)"; exit 1; }
echo "follow.sh: PASSED (logs in $WORK/out)"
