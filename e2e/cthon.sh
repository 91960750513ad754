#!/usr/bin/env bash
# e2e/cthon.sh — the Connectathon suite (cthon04) and our own telldir/seekdir
# test through the Linux 6.1 kernel client (also run by `make e2e`).
#
# Builds cthon04's basic (test1-9) and special tests statically with gcc from
# ../shared/cthon04 (read-only: the build happens in a temp dir) plus two
# probes of ours (e2e/cthon/seekdir.c, erofs.c), packs them into an extra
# initramfs archive, makes a small repository (a 3,000-file directory, a
# merge of two branches that both add to it), and serves it three ways at
# once: `--overlay` (writable), read-only, `--merge`, and `--overlay --async`
# (basic test4 and test5 against it and the overlay, back to back, timed by
# cthon's -t and printed with the ratio: issue 15). One guest boot
# runs e2e/cthon/guest.sh against the three mounts; the host then asserts:
#   - every basic and special test passes against the overlay (24 tests);
#   - against the read-only export test3 (lookups, getcwd) and test9 (statfs)
#     pass, test1 (creates), test7 (links, renames) and test8 (symlinks)
#     fail with EROFS, and erofs.c sees EROFS for create, mkdir, symlink,
#     link, rename, unlink, rmdir, chmod and utimes (EACCES for truncate and
#     open for writing: ACCESS grants no MODIFY on a read-only export);
#   - seekdir.c lands on the right entry after seekdir to every telldir
#     position of a 3,300-3,800-entry directory (several READDIR replies) of
#     the overlay, the plain export and the merge view;
#   - every server served the whole run (SIGINT at the end, no panic).
#
#   e2e/cthon.sh [--keep] [--writable-ro]
#     --writable-ro  serve the "read-only" export with an overlay, to watch
#                    the read-only checks fail
# Environment: CTHON_SRC=dir (default ../shared/cthon04 beside the repo, or
# beside the repository a clone was cloned from),
# GITNFS_BIN=path skips the build, LINUX_CLIENT_BUILD as for run.sh.
# Exit: 0 all passed; 1 a check failed; 2 usage or setup error.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
KEEP=0 WRITABLE_RO=0
while (($#)); do
  case $1 in
    --keep) KEEP=1; shift ;;
    --writable-ro) WRITABLE_RO=1; shift ;;
    *) echo "cthon.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
die() { echo "cthon.sh: ERROR: $1" >&2; exit 2; }
. "$HERE/lib.sh"
T0=$SECONDS
phase() { echo "cthon.sh: [$((SECONDS - T0))s] $*" >&2; }

SRC=${CTHON_SRC:-$ROOT/../shared/cthon04}
# A clone made elsewhere (git clone . /tmp/x) finds it beside the
# repository it was cloned from.
if [[ -z ${CTHON_SRC:-} && ! -d $SRC ]]; then
  origin=$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)
  [[ -n $origin && -d $origin/../shared/cthon04 ]] && SRC=$origin/../shared/cthon04
fi
[[ -f $SRC/basic/test1.c && -f $SRC/special/telldir.c ]] || die "no cthon04 source at $SRC (set CTHON_SRC)"
SRC=$(cd "$SRC" && pwd)
# gcc with a static libc (libc6-dev) builds cthon04 and the probes.
if ! command -v gcc >/dev/null || [[ $(gcc -print-file-name=libc.a) != /* ]]; then
  [[ $(id -u) == 0 ]] || die "gcc and libc6-dev are needed to build cthon04 (apt-get install gcc libc6-dev)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >&2 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >&2; } \
    || die "apt-get install gcc libc6-dev failed"
fi

WORK=$(mktemp -d /tmp/gitnfs-cthon-e2e.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  ((KEEP)) || rm -rf "$WORK/repo" "$WORK/bin" "$WORK/cthon" "$WORK/extra" "$WORK/extra.cpio" "$WORK/out/vm/initrd.cpio" "$WORK/overlay" "$WORK/ro-overlay" "$WORK/async-overlay"
}
trap cleanup EXIT

phase "linux-client/setup.sh (quick when cached)"
"$HERE/linux-client/setup.sh" >&2 || die "linux-client/setup.sh failed"

# ------------------------------------------------------------ the programs
phase "building cthon04 basic + special from $SRC (gcc -static) and our probes"
BASIC=(test1 test2 test3 test4 test5 test6 test7 test8 test9)
SPECIAL=(op_unlk op_ren op_chmod dupreq excltest negseek rename holey truncate nfsidem rewind telldir freesp bigfile bigfile2)
cp -r "$SRC" "$WORK/cthon"
chmod -R u+w "$WORK/cthon"
# cthon's Makefiles include tests.init, which its tests.init.sh would
# write with libtirpc flags that basic and special do not need.
printf 'CC=gcc\nCFLAGS=-DLINUX -DHAVE_SOCKLEN_T -DGLIBC=22 -DMMAP -DSTDARG -static -O2 -w -s\nLIBS=\n' > "$WORK/cthon/tests.init"
make -s -C "$WORK/cthon/basic" "${BASIC[@]}" > "$WORK/build.log" 2>&1 \
  && make -s -C "$WORK/cthon/special" "${SPECIAL[@]}" >> "$WORK/build.log" 2>&1 \
  || { tail -n 20 "$WORK/build.log" >&2; die "building cthon04 failed (log: $WORK/build.log)"; }
X=$WORK/extra
mkdir -p "$X/extra/cthon/basic" "$X/extra/cthon/special" "$X/bin"
for t in "${BASIC[@]}"; do cp "$WORK/cthon/basic/$t" "$X/extra/cthon/basic/"; done
for t in "${SPECIAL[@]}"; do cp "$WORK/cthon/special/$t" "$X/extra/cthon/special/"; done
gcc -static -O2 -s -Wall -Werror -o "$X/extra/seekdir" "$HERE/cthon/seekdir.c" || die "building seekdir.c failed"
gcc -static -O2 -s -Wall -Werror -o "$X/extra/erofs" "$HERE/cthon/erofs.c" || die "building erofs.c failed"
cp "$HERE/cthon/guest.sh" "$X/extra/run.sh"
# The guest's busybox applets the script and cthon need (testdir() runs
# system("rm -r ...")); the base initramfs links only a few.
for a in rm cp mkdir env sed date; do ln -s busybox "$X/bin/$a"; done
(cd "$X" && find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --owner 0:0 --quiet) > "$WORK/extra.cpio"

mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/census" ./e2e/census) || die "go build ./e2e/census failed"
if [[ -n ${GITNFS_BIN:-} ]]; then
  BIN=$GITNFS_BIN
else
  (cd "$ROOT" && go build -o "$WORK/bin/gitnfs" ./cmd/gitnfs) || die "go build ./cmd/gitnfs failed"
  BIN=$WORK/bin/gitnfs
fi

# --------------------------------------------------------- the repository
# base: big/ (3,000 files), cthon-ro/ (what the read-only tests use); ours
# adds 300 files to big/ and changes one, theirs adds 300, changes the same
# one (a conflict) and deletes one: the merge view's big/ is a real merge.
phase "making the repository"
REPO=$WORK/repo
git init -q -b main "$REPO"
{
  blob() { printf 'M 100644 inline %s\ndata %d\n%s\n' "$1" "$((${#2} + 1))" "$2"; }
  commit() { # commit BRANCH MARK FROM MESSAGE
    printf 'commit refs/heads/%s\nmark :%s\ncommitter cthon <cthon@example.com> 1700000000 +0000\ndata %d\n%s\n' "$1" "$2" "${#4}" "$4"
    [[ -n $3 ]] && printf 'from :%s\n' "$3"
    return 0
  }
  commit base 1 "" base
  for i in $(seq -w 0 2999); do blob "big/file-$i.txt" "$i"; done
  blob cthon-ro/tracked.txt "tracked"
  blob cthon-ro/sub/inner.txt "inner"
  blob README "cthon e2e"
  commit ours 2 1 ours
  for i in $(seq -w 0 299); do blob "big/ours-$i.txt" "$i"; done
  blob big/file-0007.txt "ours"
  commit theirs 3 1 theirs
  for i in $(seq -w 0 299); do blob "big/theirs-$i.txt" "$i"; done
  blob big/file-0007.txt "theirs"
  printf 'D big/file-0020.txt\n'
} | git -C "$REPO" fast-import --quiet || die "git fast-import failed"
git -C "$REPO" update-ref HEAD refs/heads/ours

# ----------------------------------------------------------------- servers
declare -A PORT SPID
e2e_ports overlay ro merge async
e2e_start overlay --rev ours --overlay "$WORK/overlay"
RO_ARGS=()
((WRITABLE_RO)) && RO_ARGS=(--overlay "$WORK/ro-overlay")
e2e_start ro --rev ours "${RO_ARGS[@]}"
e2e_start merge --rev ours --merge theirs
# --async (issue 15): basic test4 (1,000 chmod+stat) and test5 (write,
# read) run against it and against the overlay again, back to back, for
# the ratio; every fsync skipped is one the overlay's test4 waits for.
e2e_start async --rev ours --overlay "$WORK/async-overlay" --async
e2e_wait_up overlay ro merge async

# ------------------------------------------------------------------- guest
phase "booting the guest: cthon basic + special (overlay), read-only subset, seekdir x3"
HRC=0
T1=$SECONDS
"$HERE/linux-client/run.sh" --no-setup --no-count --port "${PORT[overlay]}" --workloads script \
  --extra-cpio "$WORK/extra.cpio" --script /extra/run.sh \
  --mount "ro=${PORT[ro]}" --mount "merge=${PORT[merge]}" --mount "async=${PORT[async]}" \
  --outdir "$WORK/out/vm" --timeout 900 --workload-timeout 700 --label "cthon" \
  > "$WORK/out/census.txt" 2> "$WORK/out/harness.stderr" || HRC=$?
VM_S=$((SECONDS - T1))
rm -f "$WORK/out/vm/initrd.cpio"

e2e_stop overlay ro merge async

e2e_guest_output
echo "==== guest output ($WORK/out/guest.txt, $(wc -l < "$WORK/out/guest.txt") lines) ===="
grep -E '^(==|RESULT|  \| (seekdir|erofs))' "$WORK/out/guest.txt" || true
if ((HRC != 0)); then
  echo "(the harness exited $HRC: $(grep -m1 -E 'error=|ERROR' "$WORK/out/census.txt" "$WORK/out/harness.stderr" | head -c 300))"
fi

result() { grep -E "^RESULT $1 $2 " "$WORK/out/guest.txt" | tail -n1; }
secs() { sed -n 's/.* s=\([0-9]*\).*/ [\1 s]/p' <<< "$1"; }
expect_pass() { # expect_pass SUITE TEST WHAT
  local r; r=$(result "$1" "$2")
  if [[ $r == *" rc=0 "* ]]; then pass "$1/$2 $3$(secs "$r")"
  elif [[ -z $r ]]; then fail "$1/$2 did not run ($3)"
  else fail "$1/$2 $3: ${r#RESULT }"; grep -A0 -B8 -F "$r" "$WORK/out/guest.txt" | grep '^  |' | tail -n 6
  fi
}
expect_erofs() { # expect_erofs SUITE TEST WHAT: must fail, and because of EROFS
  local r; r=$(result "$1" "$2")
  if [[ -z $r ]]; then fail "$1/$2 did not run ($3)"
  elif [[ $r == *" rc=0 "* ]]; then fail "$1/$2 $3: succeeded on a read-only export"
  elif [[ $r != *" erofs=1"* ]]; then fail "$1/$2 $3: failed, but not with EROFS: ${r#RESULT }"; grep -B8 -F "$r" "$WORK/out/guest.txt" | grep '^  |' | tail -n 4
  else pass "$1/$2 $3$(secs "$r"): fails with EROFS ($(grep -B8 -F "$r" "$WORK/out/guest.txt" | grep -m1 -o "can't [a-z]* [^:]*\|creat [^:]* failed" || true))"
  fi
}
for t in "${BASIC[@]}"; do expect_pass basic "$t" "(overlay)"; done
for t in "${SPECIAL[@]}"; do expect_pass special "$t" "(overlay)"; done
expect_pass ro test3 "lookups across the mount point, getcwd (read-only export)"
expect_pass ro test9 "statfs (read-only export)"
expect_erofs ro test1 "creates"
expect_erofs ro test7 "links and renames (it stops at its first create)"
expect_erofs ro test8 "symlinks (it stops at its first create)"
expect_pass ro-probe erofs "no change to the read-only export went through"
for op in create mkdir symlink link rename unlink rmdir chmod utimes truncate open-for-write; do
  l=$(grep -m1 "^  | erofs $op " "$WORK/out/guest.txt" || true)
  case $l in
    *" ok ("*) pass "ro-probe/$op $(sed 's/.* ok (\(.*\))$/\1/' <<< "$l")" ;;
    "") fail "ro-probe/$op not reported" ;;
    *) fail "ro-probe/$op ${l#  | erofs $op }" ;;
  esac
done
for kind in overlay plain merge; do
  expect_pass seekdir "$kind" "telldir/seekdir: $(grep -B1 -F "RESULT seekdir $kind " "$WORK/out/guest.txt" | grep -m1 -o 'dir=.* failed=[0-9]*' || true)"
done
# Several READDIR replies per listing: the read-only and merge servers saw
# only the tests above (their census counts READDIR and READDIRPLUS calls).
for kind in ro merge; do
  n=$(awk '$1 == "NFS3.READDIRPLUS" || $1 == "NFS3.READDIR" { n += $2 } END { print n + 0 }' "$WORK/out/$kind.stderr")
  if ((n >= 3)); then pass "readdir-replies/$kind     $n READDIR(PLUS) calls: the big directory took several replies"
  else fail "readdir-replies/$kind     only $n READDIR(PLUS) calls: the test did not span several replies"; fi
done
# cthon_secs SUITE TEST: the first time TEST printed with -t before its
# RESULT line (test4: its chmods; test5: its writes). cthon prints hundredths as "%ld.%-2ld" (1.05 s as "1.5 "),
# so the part after the dot is read as a count of hundredths.
cthon_secs() {
  grep -B4 -F "RESULT $1 $2 " "$WORK/out/guest.txt" | grep -o 'in [0-9]*\.[0-9]* *seconds' | head -n1 \
    | awk '{ split($2, p, "."); printf "%.2f", p[1] + p[2] / 100 }' || true
}
# --async against the overlay, side by side in this boot: the tests must
# pass on both; their own timings (cthon's -t) are printed with the ratio.
for t in test4 test5; do
  expect_pass sync-again "$t" "(overlay, run again beside --async)"
  expect_pass async "$t" "(overlay --async)"
  ts=$(cthon_secs sync-again "$t") ta=$(cthon_secs async "$t")
  if [[ -n $ts && -n $ta ]]; then
    echo "async/$t timing           overlay ${ts} s, --async ${ta} s: $(awk -v s="$ts" -v a="$ta" 'BEGIN { if (a > 0) printf "%.2fx", s / a; else print "n/a" }') (cthon's own -t timing)"
  fi
done
e2e_kernel_log
echo "cthon.sh: the guest ran ${VM_S}s; whole suite $((SECONDS - T0))s; logs in $WORK/out"
if ((FAIL)); then echo "cthon.sh: FAILED"; exit 1; fi
echo "cthon.sh: PASSED"
