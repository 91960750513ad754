#!/usr/bin/env bash
# e2e/revisions.sh — one server, every revision (issue 16), through the
# Linux 6.1 kernel client (also run by `make e2e`).
#
# A generated repository has five tagged versions (v1..v5 = main, each
# changing, adding and removing files; origin/feature = v2). Two servers of
# it serve main; one boot of the guest mounts, at once:
#   - from the stable one: its root, 127.0.0.1:/v1:, /v4: and /v3:src
#     (Linux puts every mount of one server on one connection);
#   - from one restarted every 2 s by e2e/restarter (the socket held, as
#     systemd holds it): /v1: .. /v5: and its root.
# The guest (e2e/revisions/guest.sh) reports and the host checks, against git:
#   one-connection          every mount of the stable server (and the revision
#                           automounted under .gitnfs/rev) uses one TCP connection
#   diff/mounts, diff/rev   `diff -rq` of v1: and v4: (two mounts), and of
#                           .gitnfs/rev/v1 and .gitnfs/rev/v4 (one mount), name
#                           exactly the paths `git diff --name-only v1 v4` names
#   digest/*                every file's bytes of each mount equal git archive's
#   hidden, count           .gitnfs is in no listing; find of the root counts
#                           what git ls-tree -r -t counts
#   revls                   .gitnfs/rev lists the refs (origin/ a directory)
#   inodes, submount        the same path in two revisions is two inodes; a
#                           revision under .gitnfs/rev is a submount to the
#                           client (its own st_dev: another fsid is a mount
#                           point), .gitnfs itself is not
#   read-only               a revision is read-only
#   restart/*               after >= 3 restarts and dropped caches, every file of
#                           the five revision mounts reads the same bytes, with
#                           zero errors (no ESTALE: handles name their commit)
#   ops/junction            a cold walk of .gitnfs/rev/v4 costs what a cold walk
#                           of v4 mounted by itself does, plus the way in (<= 16)
#   ops/undisturbed         a warm walk of the root costs no more after it
#   ops/shared              v4 mounted by itself shares the client's cache with
#                           .gitnfs/rev/v4 (same fsid: one superblock)
#
#   e2e/revisions.sh [--keep]
# Environment: GITNFS_BIN=path skips the build, LINUX_CLIENT_BUILD as for run.sh.
# Exit: 0 all passed; 1 a check failed; 2 usage or setup error.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH=$PATH:/usr/local/go/bin LC_ALL=C
. "$HERE/lib.sh"
e2e_suite revisions.sh "$@"

WORK=$(mktemp -d /tmp/gitnfs-revisions-e2e.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  ((KEEP)) || rm -rf "$WORK/repo" "$WORK/bin" "$WORK/extra" "$WORK/extra.cpio" "$WORK/out/vm/initrd.cpio" "$WORK/tree"
}
trap cleanup EXIT

"$HERE/linux-client/setup.sh" >&2 || die "linux-client/setup.sh failed"
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/census" ./e2e/census && go build -o "$WORK/bin/restarter" ./e2e/restarter) \
  || die "go build of e2e/census or e2e/restarter failed"
e2e_gitnfs
# GNU diff, not busybox's: busybox diff -r says nothing of a directory only
# one side has, and GNU diff is what compares two trees in practice (it
# takes equal st_dev and st_ino for the same file, and skips it).
e2e_extra_cpio "$HERE/revisions/guest.sh" "awk cut md5sum sort xargs stat tr head sed touch" /usr/bin/diff

# The repository: v1 is 12 directories of 12 files (plain names: the
# digests are computed the same way by the guest's busybox and the host's
# coreutils); each next version rewrites 9 files, removes 2, adds a
# directory of 4 and changes a mode.
REPO=$WORK/repo
git init -q --bare -b main "$REPO"
{
  n=0
  for v in 1 2 3 4 5; do
    printf 'commit refs/heads/main\nmark :%d\ncommitter e2e <e2e@example.com> %d +0000\ndata 3\nv%d\n' "$v" $((1700000000 + v)) "$v"
    ((v > 1)) && printf 'from :%d\n' $((v - 1))
    if ((v == 1)); then
      for d in $(seq -w 1 12); do for f in $(seq -w 1 12); do
        c="file $d/$f of v1"; printf 'M 100644 inline src/d%s/f%s.c\ndata %d\n%s\n' "$d" "$f" $((${#c} + 1)) "$c"
      done; done
      c="readme v1"; printf 'M 100644 inline README\ndata %d\n%s\n' $((${#c} + 1)) "$c"
    else
      for k in 1 2 3 4 5 6 7 8 9; do
        d=$(printf %02d $(((k * 7 + v) % 12 + 1))) f=$(printf %02d $(((k * 5 + v * 3) % 12 + 1)))
        c="file $d/$f rewritten in v$v"; printf 'M 100644 inline src/d%s/f%s.c\ndata %d\n%s\n' "$d" "$f" $((${#c} + 1)) "$c"
      done
      printf 'D src/d%02d/f%02d.c\nD src/d%02d/f%02d.c\n' $((v + 2)) $((v + 1)) $((v + 5)) $((v + 6))
      for f in 1 2 3 4; do c="new in v$v"; printf 'M 100644 inline added/v%d/n%d.c\ndata %d\n%s\n' "$v" "$f" $((${#c} + 1)) "$c"; done
      c="exec v$v"; printf 'M 100755 inline src/d%02d/f12.c\ndata %d\n%s\n' "$v" $((${#c} + 1)) "$c"
      c="readme v$v"; printf 'M 100644 inline README\ndata %d\n%s\n' $((${#c} + 1)) "$c"
    fi
    n=$((n + 1))
  done
} | git -C "$REPO" fast-import --quiet || die "git fast-import failed"
for v in 1 2 3 4 5; do git -C "$REPO" tag -a -m "v$v" "v$v" "main~$((5 - v))"; done
git -C "$REPO" update-ref refs/remotes/origin/feature v2
echo "revisions.sh: main $(git -C "$REPO" rev-parse --short main), $(git -C "$REPO" ls-tree -r main | wc -l) files" >&2

declare -A PORT SPID
e2e_ports stable restarted
e2e_start stable --rev main
mkdir -p "$WORK/out"
env --default-signal=INT "$WORK/bin/restarter" -listen "127.0.0.1:${PORT[restarted]}" -every 2s -log "$WORK/out/restarts.log" \
  -- "$BIN" serve --repo "$REPO" --rev main --listen "127.0.0.1:${PORT[restarted]}" --no-git-dir \
  > "$WORK/out/restarted.stdout" 2> "$WORK/out/restarted.stderr" &
SPID[restarted]=$!
PIDS+=($!)
e2e_wait_up stable restarted

MOUNTS=(--mount "r1=${PORT[stable]}:/v1:" --mount "r4=${PORT[stable]}:/v4:" --mount "r3s=${PORT[stable]}:/v3:src")
for v in 1 2 3 4 5; do MOUNTS+=(--mount "q$v=${PORT[restarted]}:/v$v:"); done
MOUNTS+=(--mount "qroot=${PORT[restarted]}")
echo "revisions.sh: [$((SECONDS - T0))s] booting the guest: 4 mounts of the stable server, 6 of the restarted one" >&2
HRC=0
"$HERE/linux-client/run.sh" --no-setup --no-count --port "${PORT[stable]}" --workloads script \
  --extra-cpio "$WORK/extra.cpio" --script /extra/run.sh "${MOUNTS[@]}" \
  --outdir "$WORK/out/vm" --timeout 400 --workload-timeout 300 --label "revisions" \
  > "$WORK/out/census.txt" 2> "$WORK/out/harness.stderr" || HRC=$?

e2e_stop stable
kill -INT "${SPID[restarted]}" 2>/dev/null || true
wait "${SPID[restarted]}" 2>/dev/null || true
e2e_guest_output
G=$WORK/out/guest.txt
echo "==== guest output ($G) ===="
grep -v -E '^(DIFF|DIGEST) ' "$G" || true
if ((HRC != 0)); then
  echo "(the harness exited $HRC: $(grep -m1 -E 'error=|ERROR' "$WORK/out/census.txt" "$WORK/out/harness.stderr" | head -c 300))"
fi

# What git says.
gitdigest() { # gitdigest TREEISH: the guest's digest, of git archive's files
  rm -rf "$WORK/tree"; mkdir -p "$WORK/tree"
  git -C "$REPO" archive --format=tar "$1" | tar -x -C "$WORK/tree"
  (cd "$WORK/tree" && find . -type f | sort | xargs md5sum | md5sum | cut -d' ' -f1)
}
want_diff=$(git -C "$REPO" diff --no-renames --name-only v1 v4 | sort)
for label in mounts rev; do
  got=$(sed -n "s/^DIFF $label //p" "$G" | sort)
  if [[ -n $want_diff && $got == "$want_diff" ]]; then
    pass "diff/$label              diff -rq names the $(wc -l <<< "$got") paths git diff --name-only v1 v4 names"
  else
    fail "diff/$label              diff -rq: $(diff <(echo "$want_diff") <(echo "$got") | head -n 6 | tr '\n' ' ')"
  fi
done
digest_check() { # digest_check LABEL TREEISH
  local got want; got=$(sed -n "s/^DIGEST $1 //p" "$G" | head -n 1); want=$(gitdigest "$2")
  if [[ -n $got && $got == "$want" ]]; then pass "digest/$1 $(printf '%*s' $((16 - ${#1})) '') every file of $2 as git archive has it"
  else fail "digest/$1 $(printf '%*s' $((16 - ${#1})) '') $got, git archive $2: $want"; fi
}
digest_check r1 v1
digest_check r4 v4
digest_check r3src v3:src
digest_check main main
digest_check rev-v1 v1
digest_check rev-origin-feature origin/feature
for v in 1 2 3 4 5; do digest_check "q$v" "v$v"; digest_check "q$v-after" "v$v"; done
digest_check qrev-v2 v2
digest_check qrev-v2-after v2
result() { # result CHECK: the guest's RESULT line for it
  local r; r=$(grep -m1 "^RESULT $1 " "$G" || true)
  case $r in
    *" $1 ok "*) pass "$1 $(printf '%*s' $((23 - ${#1})) '') ${r#RESULT $1 ok }" ;;
    "") fail "$1 not reported" ;;
    *) fail "$1 ${r#RESULT $1 }" ;;
  esac
}
for c in hidden-ls lookup inodes submount read-only; do result "$c"; done
want=$(($(git -C "$REPO" ls-tree -r -t main | wc -l) + 1))
got=$(sed -n 's/^COUNT find-root //p' "$G")
if [[ $got == "$want" ]]; then pass "count                   find of the root: $got paths, git ls-tree -r -t: $want (+ the root): nothing of .gitnfs"
else fail "count                   find of the root: ${got:-none}, git ls-tree -r -t + 1: $want"; fi
revls=$(sed -n 's/^REVLS //p' "$G")
if [[ $revls == "HEAD main origin v1 v2 v3 v4 v5 " && $(sed -n 's/^REVLS-origin //p' "$G") == "feature " ]]; then
  pass "revls                   .gitnfs/rev: $revls; origin/: feature"
else fail "revls                   .gitnfs/rev: '$revls', origin/: '$(sed -n 's/^REVLS-origin //p' "$G")'"; fi

# One connection for every mount of the stable server (Linux shares its
# nfs_client among mounts of one server): one local port in every xprt line.
read -r -a ports <<< "$(sed -n 's/^XPRT //p' "$G")"
if ((${#ports[@]} == 5)) && [[ $(printf '%s\n' "${ports[@]}" | sort -u | wc -l) == 1 ]]; then
  pass "one-connection           the root, v1:, v4:, v3:src and .gitnfs/rev/v4 all ride one connection (local port ${ports[0]})"
else fail "one-connection           local ports of the stable server's mounts: ${ports[*]:-none}"; fi

# Restarts: enough of them, and no error on any revision mount.
n=$(grep -c '^restart' "$WORK/out/restarts.log" || true)
if ((n >= 3)); then pass "restart/count           the server restarted $n times under the five revision mounts"
else fail "restart/count           only $n restarts: the test proved nothing"; fi
errs=$(awk '$1 == "OPS" && $2 ~ /^q/ { for (i = 4; i <= NF; i++) if ($i ~ /^ERRORS=/) { split($i, x, "="); s += x[2] } } END { print s + 0 }' "$G")
if ((errs == 0)); then pass "restart/errors          0 error replies on the six mounts of the restarted server (no ESTALE)"
else fail "restart/errors          $errs error replies on the mounts of the restarted server"; fi

# The cost of .gitnfs/rev, printed; the walk through the junction must cost
# about what the same revision mounted by itself costs, and must not make
# the root mount's next warm walk cost more than the one before it (a
# superblock that took on the revision's fsid would revalidate nothing
# it primed, see README).
echo "==== RPCs of each step (client mountstats) ===="
grep '^OPS ' "$G" | grep -v -- '-total ' | sed 's/^OPS //'
tot() { sed -n "s/^OPS $1 .*TOTAL=\([0-9]*\).*/\1/p" "$G"; }
opn() { sed -n "s/^OPS $1 .* $2=\([0-9]*\) .*/\1/p" "$G"; }
cr=$(tot cold-rev-v4) cm=$(tot cold-mount-v4) wb=$(tot warm-main-before) wa=$(tot warm-main-after)
# The way in: ACCESS and LOOKUP of .gitnfs, rev and v4, and the automount
# of the new superblock (FSINFO, PATHCONF, GETATTR): 11 RPCs measured
# (Linux 6.1: 4 LOOKUP, 3 FSINFO, 2 ACCESS, 1 PATHCONF, 1 GETATTR), 16 allowed.
if [[ -n $cr && -n $cm ]] && ((cm > 0 && cr <= cm + 16)); then
  pass "ops/junction            a cold walk of .gitnfs/rev/v4: $cr RPCs; of v4 mounted by itself: $cm"
else fail "ops/junction            a cold walk of .gitnfs/rev/v4: ${cr:-?} RPCs; of v4 mounted by itself: ${cm:-?} (want at most 16 more)"; fi
if [[ -n $wb && -n $wa ]] && ((wa <= wb)); then
  pass "ops/undisturbed         a warm walk of the root: $wb RPCs before walking .gitnfs/rev/v4, $wa after"
else fail "ops/undisturbed         a warm walk of the root: ${wb:-?} RPCs before walking .gitnfs/rev/v4, ${wa:-?} after"; fi
sr=$(opn shared-mount-v4 READDIRPLUS)
if [[ $sr == 0 ]]; then
  pass "ops/shared              v4 mounted by itself after .gitnfs/rev/v4 was walked: no READDIRPLUS (one superblock, one cache)"
else fail "ops/shared              v4 mounted by itself after .gitnfs/rev/v4 was walked: ${sr:-?} READDIRPLUS"; fi

e2e_kernel_log
echo "revisions.sh: whole suite $((SECONDS - T0))s; logs in $WORK/out"
if ((FAIL)); then echo "revisions.sh: FAILED"; exit 1; fi
echo "revisions.sh: PASSED"
