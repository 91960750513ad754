#!/usr/bin/env bash
# e2e/mounts.sh — mounting a subdirectory of an export through the Linux
# 6.1 kernel client (issue 13; also run by `make e2e`).
#
# Serves a small repository three ways (plain, `--merge`, `--overlay`) and
# boots the guest once with two mounts of each server: its root, and
# `127.0.0.1:/src/lib` by itself (spelled `/src/lib`, `//src//lib/` and
# `/src/lib/` for the three kinds: MOUNT normalises the path). The guest
# (e2e/mounts/guest.sh) checks, for each kind:
#   - the subdirectory mount lists the same entries (type, mode, size,
#     owner, symlink target) and bytes as src/lib seen through the root mount,
#     and its root has src/lib's fileid;
#   - `cd ..` at the mount's root lands in /mnt (the client never walks up
#     into the export), and `..` below it is the export's own parent;
#   - on the overlay, what one mount writes or removes the other sees.
# The host asserts every check, and that every server served the whole run.
#
#   e2e/mounts.sh [--keep]
# Environment: GITNFS_BIN=path skips the build, LINUX_CLIENT_BUILD as for run.sh.
# Exit: 0 all passed; 1 a check failed; 2 usage or setup error.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
. "$HERE/lib.sh"
e2e_suite mounts.sh "$@"

WORK=$(mktemp -d /tmp/gitnfs-mounts-e2e.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  ((KEEP)) || rm -rf "$WORK/repo" "$WORK/bin" "$WORK/extra" "$WORK/extra.cpio" "$WORK/out/vm/initrd.cpio" "$WORK/overlay"
}
trap cleanup EXIT

"$HERE/linux-client/setup.sh" >&2 || die "linux-client/setup.sh failed"
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/census" ./e2e/census) || die "go build ./e2e/census failed"
e2e_gitnfs
# The guest script and the busybox applets it needs beyond the base image.
e2e_extra_cpio "$HERE/mounts/guest.sh" "rm mkdir md5sum sort xargs cmp diff stat tr head basename"

# base: src/lib (files, an executable, a symlink, a deeper directory),
# src/app, docs; ours and theirs both change src/lib/a.c (a conflict in
# the merge view), each adds a file, theirs deletes src/lib/b.c.
REPO=$WORK/repo
git init -q -b main "$REPO"
{
  blob() { printf 'M %s inline %s\ndata %d\n%s\n' "${3:-100644}" "$1" "$((${#2} + 1))" "$2"; }
  commit() { # commit BRANCH MARK FROM MESSAGE
    printf 'commit refs/heads/%s\nmark :%s\ncommitter e2e <e2e@example.com> 1700000000 +0000\ndata %d\n%s\n' "$1" "$2" "${#4}" "$4"
    [[ -n $3 ]] && printf 'from :%s\n' "$3"
    return 0
  }
  commit base 1 "" base
  blob src/lib/a.c "int a(void) { return 1; }"
  blob src/lib/b.c "int b(void) { return 2; }"
  blob src/lib/run.sh "#!/bin/sh" 100755
  printf 'M 120000 inline src/lib/link\ndata 3\na.c\n'
  blob src/lib/deep/x.h "#define X 1"
  blob src/lib/deep/deeper/y.h "#define Y 2"
  blob src/app/main.c "int main(void) { return 0; }"
  blob docs/README "mounts e2e"
  commit ours 2 1 ours
  blob src/lib/a.c "int a(void) { return 10; }"
  blob src/lib/ours.c "int ours;"
  commit theirs 3 1 theirs
  blob src/lib/a.c "int a(void) { return 20; }"
  blob src/lib/theirs.c "int theirs;"
  printf 'D src/lib/b.c\n'
} | git -C "$REPO" fast-import --quiet || die "git fast-import failed"
git -C "$REPO" update-ref HEAD refs/heads/ours

declare -A PORT SPID
e2e_ports plain merge overlay
e2e_start plain --rev ours
e2e_start merge --rev ours --merge theirs
e2e_start overlay --rev ours --overlay "$WORK/overlay"
e2e_wait_up plain merge overlay

echo "mounts.sh: [$((SECONDS - T0))s] booting the guest: root and src/lib mounts of a plain, a merge and an overlay export" >&2
HRC=0
"$HERE/linux-client/run.sh" --no-setup --no-count --port "${PORT[plain]}" --workloads script \
  --extra-cpio "$WORK/extra.cpio" --script /extra/run.sh \
  --mount "plain=${PORT[plain]}" --mount "plainsub=${PORT[plain]}:/src/lib" \
  --mount "merge=${PORT[merge]}" --mount "mergesub=${PORT[merge]}://src//lib/" \
  --mount "overlay=${PORT[overlay]}" --mount "overlaysub=${PORT[overlay]}:/src/lib/" \
  --outdir "$WORK/out/vm" --timeout 300 --workload-timeout 200 --label "mounts" \
  > "$WORK/out/census.txt" 2> "$WORK/out/harness.stderr" || HRC=$?

e2e_stop plain merge overlay
e2e_guest_output
echo "==== guest output ($WORK/out/guest.txt) ===="
cat "$WORK/out/guest.txt"
if ((HRC != 0)); then
  echo "(the harness exited $HRC: $(grep -m1 -E 'error=|ERROR' "$WORK/out/census.txt" "$WORK/out/harness.stderr" | head -c 300))"
fi
check() { # check KIND CHECK
  local r; r=$(grep -m1 "^RESULT $1 $2 " "$WORK/out/guest.txt" || true)
  case $r in
    *" $2 ok "*) pass "$1/$2 ${r#RESULT $1 $2 ok }" ;;
    "") fail "$1/$2 not reported" ;;
    *) fail "$1/$2 ${r#RESULT $1 $2 }" ;;
  esac
}
for kind in plain merge overlay; do
  for c in listing contents fileid dotdot deep-dotdot; do check "$kind" "$c"; done
done
for c in write-sub-read-root write-root-read-sub remove-sub; do check overlay "$c"; done
# The subdirectory mounts reached the servers as MNT calls of the path.
for kind in plain merge overlay; do
  n=$(awk '$1 == "MOUNT3.MNT" { print $2 }' "$WORK/out/$kind.stderr")
  if ((${n:-0} >= 2)); then pass "mnt/$kind        ${n} MNT calls (the root and src/lib)"
  else fail "mnt/$kind        ${n:-0} MNT calls, want the root's and src/lib's"; fi
done
e2e_kernel_log
echo "mounts.sh: whole suite $((SECONDS - T0))s; logs in $WORK/out"
if ((FAIL)); then echo "mounts.sh: FAILED"; exit 1; fi
echo "mounts.sh: PASSED"
