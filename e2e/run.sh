#!/usr/bin/env bash
# e2e/run.sh — the real-kernel-client end-to-end suite (what `make e2e` runs).
#
# Builds gitnfs, generates a repository shaped like a real one in a fresh
# temp dir, serves it on 127.0.0.1 and lets the NFS client of a Linux 6.1
# kernel (under qemu TCG, see linux-client/) mount it afresh for each
# workload. Then it prints the client's RPC census per workload and checks:
# every file's bytes (and modes, symlink targets) identical to git; the
# walks count what git holds; no non-symlink entry with DT_UNKNOWN; cold
# `find -type f` at the client's floor (LOOKUP, READDIR(PLUS) per dir); no op
# error, timeout or retransmission (no ESTALE/EIO); every workload ok; no NFS
# complaint in the guest kernel log; the server alive until SIGINT.
#
# usage: e2e/run.sh [options] [-- linux-client/run.sh options]
#   --shape full|tiny     generated tree (default full: ~17k files, 4.3k dirs;
#                         tiny: ~300 entries, for quick runs)
#   --seed N              generator seed (default 1)
#   --server gitnfs|gonfs gitnfs (default): `go build ./cmd/gitnfs`, then
#                         gitnfs serve --repo R --rev REV --listen 127.0.0.1:PORT
#                         gonfs: go-nfs v0.0.4's stock example/osnfs (built in a
#                         throwaway module under /tmp) serving a checkout
#   --server-cmd CMD      serve with CMD instead (run with bash -c "exec CMD");
#                         {port} {repo} {rev} {checkout} are replaced; a
#                         checkout is made only if CMD names {checkout}
#                         (also: E2E_SERVER_CMD)
#   --rev REV             revision to serve (default HEAD)
#   --repo DIR            serve this existing repository instead of generating one
#   --expect-repo DIR     compute what the client must see from this repository
#                         (default: the one served; a partial clone's source,
#                         so that computing it fetches nothing into the clone)
#   --workloads LIST      default find_type_f,go_names,ls_lR,du_s,cat_all,warm_ls_lR
#   --port N              default: a free port on 127.0.0.1
#   --manifest            the guest prints one line per file (names differing paths)
#   --strict-dtype        DT_UNKNOWN forbidden for symlinks too
#   --max-lookup X        limit for LOOKUP per non-symlink entry (default 0.01)
#   --max-readdir X       limit for READDIR(PLUS) per directory (default 1.002)
#   --allow-errors LIST   WORKLOAD:OP pairs whose op errors are expected
#   --allow-retransmits   calls resent after a server restart are expected
#   --no-content-check    the run leaves cat_all out on purpose (e.g. write
#                         workloads that change the tree): its absence is not
#                         a content-digest failure (when cat_all runs it is
#                         checked as always)
#   --timeout SEC         limit for the VM (default 780)
#   --out DIR             logs and census go here (default: <tempdir>/out)
#   --keep                keep the generated repository and checkout
# Environment: GITNFS_BIN=path skips the build; LINUX_CLIENT_BUILD=dir is
# the harness's writable cache (default e2e/linux-client/build).
# Exit: 0 all assertions passed; 1 an assertion failed; 2 usage or setup
# error (build, generator, server did not start); otherwise the harness's
# exit code when it produced no census.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin

SHAPE=full SEED=1 SERVER=gitnfs SERVER_CMD=${E2E_SERVER_CMD:-} REV=HEAD REPO_IN="" EXPECT_REPO="" PORT=""
WORKLOADS=find_type_f,go_names,ls_lR,du_s,cat_all,warm_ls_lR
MANIFEST=0 KEEP=0 OUT="" TIMEOUT=780
CHECK_ARGS=()
HARNESS_ARGS=()

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
die() { echo "e2e: ERROR: $1" >&2; exit "${2:-2}"; }
log() { echo "e2e: $*" >&2; }
. "$HERE/lib.sh" # e2e_accepting

while (($#)); do
  case "$1" in
    --shape) SHAPE=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --server) SERVER=$2; shift 2 ;;
    --server-cmd) SERVER_CMD=$2; shift 2 ;;
    --rev) REV=$2; shift 2 ;;
    --repo) REPO_IN=$(cd "$2" && pwd); shift 2 ;;
    --expect-repo) EXPECT_REPO=$(cd "$2" && pwd); shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --manifest) MANIFEST=1; shift ;;
    --strict-dtype) CHECK_ARGS+=(-strict-dtype); shift ;;
    --max-lookup) CHECK_ARGS+=(-max-lookup "$2"); shift 2 ;;
    --max-readdir) CHECK_ARGS+=(-max-readdir "$2"); shift 2 ;;
    --allow-errors) CHECK_ARGS+=(-allow-errors "$2"); shift 2 ;;
    --no-content-check) CHECK_ARGS+=(-no-content-check); shift ;;
    --allow-retransmits) CHECK_ARGS+=(-allow-retransmits); shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --) shift; HARNESS_ARGS=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ $SHAPE == full || $SHAPE == tiny ]] || die "--shape must be full or tiny"
[[ $SERVER == gitnfs || $SERVER == gonfs ]] || die "--server must be gitnfs or gonfs"
[[ -z $PORT || $PORT =~ ^[0-9]+$ ]] || die "--port must be a number"

T0=$SECONDS
phase() { log "[$((SECONDS - T0))s] $*"; }

WORK=$(mktemp -d /tmp/gitnfs-e2e.XXXXXX)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SPID=""
cleanup() {
  if [[ -n $SPID ]] && kill -0 "$SPID" 2>/dev/null; then
    kill -INT "$SPID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SPID" 2>/dev/null || true
  fi
  if ((KEEP == 0)); then rm -rf "$WORK/repo" "$WORK/checkout" "$WORK/bin"; fi
}
trap cleanup EXIT

# ------------------------------------------------------------------ build
phase "linux-client/setup.sh (qemu, kernel, initramfs; quick when cached)"
"$HERE/linux-client/setup.sh" >&2 || die "linux-client/setup.sh failed"
phase "building the host tools"
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/genrepo" ./e2e/genrepo && go build -o "$WORK/bin/census" ./e2e/census) \
  || die "go build of e2e/genrepo or e2e/census failed"
CENSUS=$WORK/bin/census

if [[ -n $SERVER_CMD ]]; then
  :
elif [[ $SERVER == gonfs ]]; then
  phase "building go-nfs v0.0.4 example/osnfs (stock handlers; listener bound to 127.0.0.1)"
  GONFS=$("$HERE/gonfs-build.sh") || die "building go-nfs osnfs failed"
  SERVER_CMD="$GONFS {checkout} {port}"
else
  if [[ -n ${GITNFS_BIN:-} ]]; then
    BIN=$GITNFS_BIN
  else
    phase "go build ./cmd/gitnfs"
    BIN=$WORK/bin/gitnfs
    (cd "$ROOT" && go build -o "$BIN" ./cmd/gitnfs) || die "go build ./cmd/gitnfs failed"
  fi
fi

# ---------------------------------------------------------- the repository
if [[ -n $REPO_IN ]]; then
  REPO=$REPO_IN
else
  phase "generating the $SHAPE repository (seed $SEED)"
  REPO=$WORK/repo
  "$WORK/bin/genrepo" -o "$REPO" -shape "$SHAPE" -seed "$SEED" | tee "$OUT/genrepo.txt" >&2 \
    || die "genrepo failed"
fi
phase "computing what git holds (ls-tree, cat-file --batch, sha256)"
"$CENSUS" expect -repo "${EXPECT_REPO:-$REPO}" -rev "$REV" -manifest "$OUT/expect.manifest" > "$OUT/expect.json" \
  || die "census expect failed"

# ----------------------------------------------------------------- server
PORT=${PORT:-$("$CENSUS" freeport)}
if [[ -n $SERVER_CMD ]]; then
  CHECKOUT=""
  if [[ $SERVER_CMD == *"{checkout}"* ]]; then
    phase "checking out $REV (git archive | tar -x) for the server"
    CHECKOUT=$WORK/checkout
    mkdir -p "$CHECKOUT"
    git -C "$REPO" archive "$REV" | tar -x -C "$CHECKOUT" || die "checkout failed"
  fi
  CMD=$SERVER_CMD
  CMD=${CMD//\{port\}/$PORT}
  CMD=${CMD//\{repo\}/$(printf %q "$REPO")}
  CMD=${CMD//\{rev\}/$(printf %q "$REV")}
  CMD=${CMD//\{checkout\}/$(printf %q "$CHECKOUT")}
  LABEL="server-cmd"
  [[ $SERVER == gonfs && -z ${E2E_SERVER_CMD:-} ]] && LABEL="go-nfs v0.0.4 osnfs"
  phase "starting: $CMD"
  # A background job of a script starts with SIGINT ignored; --default-signal
  # undoes that, so that the server can be stopped with SIGINT.
  JJ_VFS_STATS=1 env --default-signal=INT bash -c "exec $CMD" > "$OUT/server.stdout" 2> "$OUT/server.stderr" &
  SPID=$!
else
  LABEL="gitnfs"
  # --no-git-dir: the census compares the walk with git's tree, which has no
  # .git (README "git inside the mount"; its kernel-client proof is to come).
  phase "starting: $BIN serve --repo $REPO --rev $REV --listen 127.0.0.1:$PORT --no-git-dir"
  JJ_VFS_STATS=1 env --default-signal=INT "$BIN" serve --repo "$REPO" --rev "$REV" --listen "127.0.0.1:$PORT" --no-git-dir \
    > "$OUT/server.stdout" 2> "$OUT/server.stderr" &
  SPID=$!
fi
if ! e2e_accepting "$SPID" "$PORT"; then
  tail -n 20 "$OUT/server.stderr" >&2 || true
  die "the server did not accept connections on 127.0.0.1:$PORT within 15 s"
fi

# ---------------------------------------------------------------- harness
phase "running the Linux client: $WORKLOADS (each on a fresh mount)"
HARGS=(--port "$PORT" --no-count --workloads "$WORKLOADS" --outdir "$OUT/vm" --timeout "$TIMEOUT"
       --workload-timeout 400 --label "$LABEL $SHAPE" --no-setup)
((MANIFEST)) && HARGS+=(--manifest)
HRC=0
"$HERE/linux-client/run.sh" "${HARGS[@]}" "${HARNESS_ARGS[@]}" > "$OUT/census.txt" 2> "$OUT/harness.stderr" || HRC=$?
grep -E '^(run.sh|setup):' "$OUT/harness.stderr" >&2 || true
phase "harness exit code $HRC (its census: $OUT/census.txt, $OUT/vm/census.json)"

# ------------------------------------------------------------ stop server
ALIVE=1
kill -0 "$SPID" 2>/dev/null || ALIVE=0
SRC=0
if ((ALIVE)); then
  kill -INT "$SPID" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$SPID" 2>/dev/null; then
    log "the server did not exit within 10 s of SIGINT; killing it"
    kill -KILL "$SPID" 2>/dev/null || true
  fi
fi
wait "$SPID" 2>/dev/null || SRC=$?
SPID=""
echo "==== server stderr ($OUT/server.stderr, exit code $SRC) ===="
if [[ $(wc -l < "$OUT/server.stderr") -gt 200 ]]; then
  head -n 20 "$OUT/server.stderr"; echo "... ($(wc -l < "$OUT/server.stderr") lines; the last 150:)"; tail -n 150 "$OUT/server.stderr"
else
  cat "$OUT/server.stderr"
fi

# ----------------------------------------------------------------- assert
echo "==== census of the Linux $(. /etc/os-release; echo "$VERSION_CODENAME") guest kernel's NFS client ($LABEL, $SHAPE tree, port $PORT) ===="
CRC=0
if [[ -f $OUT/vm/census.json ]]; then
  "$CENSUS" check -expect "$OUT/expect.json" -expect-manifest "$OUT/expect.manifest" -results "$OUT/vm" \
    -workloads "$WORKLOADS" "${CHECK_ARGS[@]}" > "$OUT/check.txt" 2>&1 || CRC=$?
  cat "$OUT/check.txt"
else
  echo "FAIL harness               no census.json from the guest (harness exit $HRC); see $OUT/vm/console.log"
  tail -n 20 "$OUT/vm/console.log" 2>/dev/null || true
  CRC=1
fi
if ((ALIVE == 0)); then
  echo "FAIL server-alive          the server exited before the end of the run (exit code $SRC)"
  CRC=1
elif grep -q -E '^(panic:|fatal error:)' "$OUT/server.stderr"; then
  echo "FAIL server-panic          the server panicked: $(grep -m1 -E '^(panic:|fatal error:)' "$OUT/server.stderr")"
  CRC=1
else
  echo "PASS server-alive          served the whole run, exit code $SRC after SIGINT"
fi
phase "done; logs in $OUT"
if ((CRC != 0)); then
  echo "e2e: FAILED (see above; logs in $OUT)"
  exit 1
fi
if ((HRC != 0)); then
  echo "e2e: the harness exited $HRC (see $OUT/vm/console.log)"
  exit "$HRC"
fi
echo "e2e: PASSED in $((SECONDS - T0)) s"
