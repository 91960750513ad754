# e2e/lib.sh — what the suites that serve several exports to one guest boot
# share (sourced by e2e/cthon.sh, e2e/mounts.sh and e2e/revisions.sh): free
# ports, starting and stopping gitnfs servers, the guest script's report,
# the verdicts. e2e/run.sh and e2e/promisor.sh use e2e_accepting alone.
#
# The sourcing script sets WORK (a fresh temp directory), BIN (gitnfs),
# REPO, and `declare -A PORT SPID` and `PIDS=()` before calling these.

# e2e_suite NAME ARGS...: how a suite that takes --keep alone starts: KEEP
# from its arguments (anything else is refused), die() naming it, T0.
e2e_suite() {
  SUITE=$1; shift
  KEEP=0
  while (($#)); do
    case $1 in
      --keep) KEEP=1; shift ;;
      *) echo "$SUITE: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  T0=$SECONDS
}
declare -F die > /dev/null || die() { echo "$SUITE: ERROR: $1" >&2; exit 2; }

# e2e_gitnfs: BIN, the gitnfs to serve with: $GITNFS_BIN, or ./cmd/gitnfs
# built into $WORK/bin.
e2e_gitnfs() {
  if [[ -n ${GITNFS_BIN:-} ]]; then
    BIN=$GITNFS_BIN
    return
  fi
  mkdir -p "$WORK/bin"
  (cd "$ROOT" && go build -o "$WORK/bin/gitnfs" ./cmd/gitnfs) || die "go build ./cmd/gitnfs failed"
  BIN=$WORK/bin/gitnfs
}

# e2e_extra_cpio SCRIPT "APPLET..." [HOSTBIN...]: $WORK/extra.cpio, unpacked
# over the guest's initramfs: SCRIPT as /extra/run.sh (what --script runs),
# busybox links for the applets beyond the base image, and host binaries
# copied to the same path (they must need no library the base lacks).
e2e_extra_cpio() {
  local x=$WORK/extra a h
  mkdir -p "$x/extra" "$x/bin"
  cp "$1" "$x/extra/run.sh"
  for a in $2; do ln -s busybox "$x/bin/$a"; done
  shift 2
  for h in "$@"; do install -D -m 0755 "$h" "$x$h"; done
  (cd "$x" && find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --owner 0:0 --quiet) > "$WORK/extra.cpio"
}

FAIL=0
fail() { echo "FAIL $*"; FAIL=1; }
pass() { echo "PASS $*"; }

# e2e_ports KIND...: a distinct free loopback port for each KIND in PORT.
e2e_ports() {
  local used=" " kind p
  for kind in "$@"; do
    for _ in $(seq 20); do
      p=$("$WORK/bin/census" freeport)
      [[ $used != *" $p "* ]] && break
    done
    used+="$p "
    PORT[$kind]=$p
  done
}

# e2e_start KIND ARGS...: gitnfs serve of REPO on PORT[KIND] with ARGS, its
# census on (JJ_VFS_STATS=1), output in $WORK/out/KIND.{stdout,stderr}.
# --no-git-dir: the suites compare the tree with git's, which has no .git
# (README "git inside the mount"; e2e/git.sh serves it and runs git there).
e2e_start() {
  local kind=$1; shift
  mkdir -p "$WORK/out"
  JJ_VFS_STATS=1 env --default-signal=INT "$BIN" serve --repo "$REPO" --listen "127.0.0.1:${PORT[$kind]}" --no-git-dir "$@" \
    > "$WORK/out/$kind.stdout" 2> "$WORK/out/$kind.stderr" &
  SPID[$kind]=$!
  PIDS+=($!)
}

# e2e_accepting PID PORT: 127.0.0.1:PORT accepts connections within 15 s,
# while PID (the process that is to listen there) lives.
e2e_accepting() {
  for _ in $(seq 150); do
    kill -0 "$1" 2>/dev/null || return 1
    timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# e2e_wait_up KIND...: every server accepts connections (15 s each at most).
e2e_wait_up() {
  local kind
  for kind in "$@"; do
    e2e_accepting "${SPID[$kind]}" "${PORT[$kind]}" ||
      { tail -n 20 "$WORK/out/$kind.stderr" >&2; die "the $kind server did not start on 127.0.0.1:${PORT[$kind]}"; }
  done
}

# e2e_stop KIND...: SIGINT each server and judge that it served the whole
# run: still alive at the end, no panic in its log.
e2e_stop() {
  local kind pid rc
  for kind in "$@"; do
    pid=${SPID[$kind]}
    if ! kill -0 "$pid" 2>/dev/null; then
      fail "server-alive/$kind       the server exited during the run"; continue
    fi
    kill -INT "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rc=0; wait "$pid" 2>/dev/null || rc=$?
    if grep -q -E '^(panic:|fatal error:)' "$WORK/out/$kind.stderr"; then
      fail "server-alive/$kind       panicked: $(grep -m1 -E '^(panic:|fatal error:)' "$WORK/out/$kind.stderr")"
    else
      pass "server-alive/$kind       served the whole run, exit $rc after SIGINT"
    fi
  done
}

# e2e_guest_output: the script workload's lines (`script workload=script
# line="..."`, Go-quoted in census.txt) unquoted into $WORK/out/guest.txt.
e2e_guest_output() {
  sed -n 's/^script workload=script line=//p' "$WORK/out/census.txt" \
    | sed 's/^"//; s/"$//; s/\\"/"/g; s/\\t/\t/g; s/\\\\/\\/g' > "$WORK/out/guest.txt"
}

# e2e_kernel_log: the guest kernel log has no NFS complaint.
e2e_kernel_log() {
  local complaint='nfs: server .* not responding|Stale file handle|fileid changed'
  if [[ ! -s $WORK/out/vm/console.log ]]; then
    fail "kernel-log               no guest console log"
  elif grep -q -E "$complaint" "$WORK/out/vm/console.log"; then
    fail "kernel-log               $(grep -m1 -E "$complaint" "$WORK/out/vm/console.log")"
  else
    pass "kernel-log               no NFS complaint in the guest kernel log"
  fi
}

# The suites that run git in the guest (e2e/git.sh, e2e/merge-git.sh) serve
# as an ordinary user and run git as that user in the guest.
USER_ID=1000 GROUP_ID=1000

# e2e_as_user CMD ARGS...: CMD as uid USER_ID, HOME $WORK/state/home (made
# here): root would meet a repository it does not own ("dubious
# ownership"), as the user would meet root's.
e2e_as_user() {
  [[ -d $WORK/state/home ]] || install -d -o $USER_ID -g $GROUP_ID "$WORK/state" "$WORK/state/home"
  setpriv --reuid=$USER_ID --regid=$GROUP_ID --clear-groups env HOME="$WORK/state/home" "$@"
}

# e2e_serve_as_user KIND ARGS...: gitnfs serve of REPO on PORT[KIND] as the
# user (as `sudo gitnfs mount` does), with the .git file (e2e_start's
# --no-git-dir left out) and ARGS, its census on.
e2e_serve_as_user() {
  local kind=$1; shift
  mkdir -p "$WORK/out"
  JJ_VFS_STATS=1 env --default-signal=INT setpriv --reuid=$USER_ID --regid=$GROUP_ID --clear-groups \
    env HOME="$WORK/state/home" "$BIN" serve --repo "$REPO" --listen "127.0.0.1:${PORT[$kind]}" "$@" \
    > "$WORK/out/$kind.stdout" 2> "$WORK/out/$kind.stderr" &
  SPID[$kind]=$!
  PIDS+=($!)
}

# e2e_git_archive SCRIPT "APPLET...": $WORK/extra.cpio for a guest that
# runs git: e2e_extra_cpio's, plus e2e/git/common.sh as /extra/common.sh,
# git 2.39 (the host's binary and every library ldd names: the guest has
# glibc only as far as the base image's GNU tools brought it), a passwd
# naming the user, and BIN as /extra/gitnfs (the fsmonitor hook).
e2e_git_archive() {
  local x=$WORK/extra b lib
  local gitbins=(/usr/bin/git /usr/lib/git-core/git)
  e2e_extra_cpio "$1" "$2"
  cp "$HERE/git/common.sh" "$x/extra/common.sh"
  for b in "${gitbins[@]}"; do
    install -D -m 0755 "$b" "$x$b"
    while read -r lib; do
      [[ -e $x$lib ]] || install -D -m 0755 "$(readlink -f "$lib")" "$x$lib"
    done < <(ldd "$b" | awk '/=> \// { print $3 } /^[ \t]*\/lib/ { print $1 }')
  done
  for b in "${gitbins[@]}" "$BIN"; do   # the closure is complete: nothing ldd names is missing
    ! ldd "$b" | grep -q 'not found' || die "$b: a library is not found: $(ldd "$b" | grep 'not found')"
    for lib in $(ldd "$b" | awk '/=> \// { print $3 } /^[ \t]*\/lib/ { print $1 }'); do
      [[ -e $x$lib ]] || die "$b needs $lib, which is not in the guest's archive"
    done
  done
  mkdir -p "$x/etc"
  printf 'root:x:0:0:root:/:/bin/sh\ne2e:x:%d:%d:e2e:/tmp/home:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' $USER_ID $GROUP_ID > "$x/etc/passwd"
  printf 'root:x:0:\ne2e:x:%d:\nnogroup:x:65534:\n' $GROUP_ID > "$x/etc/group"
  install -m 0755 "$BIN" "$x/extra/gitnfs"
  (cd "$x" && find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --owner 0:0 --quiet) > "$WORK/extra.cpio"
}

# e2e_git_report HRC: after a git suite's guest ran (run.sh exited HRC):
# G, its lines (e2e_guest_output), printed but the OPS lines; a failed
# set-up step (the .git file, the fsmonitor's address or hook, the
# checkout) fails the suite.
e2e_git_report() {
  e2e_guest_output
  G=$WORK/out/guest.txt
  echo "==== guest output ($G) ===="
  grep -v -E '^(OPS) ' "$G"
  if (($1 != 0)); then
    echo "(the harness exited $1: $(grep -m1 -E 'error=|ERROR' "$WORK/out/census.txt" "$WORK/out/harness.stderr" | head -c 300))"
  fi
  local c
  for c in gitfile fsmonitor-addr fsmonitor-hook worktree-add; do
    grep -q "^RESULT $c FAIL" "$G" && fail "$c $(grep -m1 "^RESULT $c FAIL" "$G")"
  done
  return 0
}

# e2e_check NAME...: the guest's verdict on each NAME (RESULT NAME ok|FAIL)
# in G; one not reported fails.
e2e_check() {
  local n r
  for n in "$@"; do
    r=$(grep -m1 "^RESULT $n " "$G" || true)
    case $r in
      *" $n ok"*) pass "$n ${r#RESULT $n ok}" ;;
      "") fail "$n not reported" ;;
      *) fail "$n ${r#RESULT $n FAIL }" ;;
    esac
  done
}

# e2e_ops_delta LABEL: "TOTAL READS op=n ..." of the mount's RPCs over the
# guest's measured command LABEL (its OPS before and after lines in G).
e2e_ops_delta() {
  awk -v l="$1" '
    $1 == "OPS" && $2 == l { for (i = 4; i <= NF; i++) { split($i, kv, "="); if ($3 == "before") b[kv[1]] = kv[2]; else { a[kv[1]] = kv[2]; o[++n] = kv[1] } } }
    END { t = 0; s = ""; for (i = 1; i <= n; i++) { d = a[o[i]] - b[o[i]]; t += d; if (d) s = s " " o[i] "=" d } printf "%d %d%s\n", t, a["READ"] - b["READ"], s }' "$G"
}
