# guest.sh: runs in the linux-client guest (busybox sh) as the `script`
# workload of e2e/revisions.sh. $1 is the root mount of the stable server
# (serving main); MNT_R1 and MNT_R4 are v1: and v4: of that server, MNT_R3S
# is v3:src; MNT_Q1..MNT_Q5 are v1: .. v5: of the restarted server, MNT_QROOT
# its root. It prints lines the host judges:
#   RESULT <check> ok|FAIL <detail>
#   DIFF <label> <path>        a path diff -rq found differing
#   DIGEST <label> <md5>       md5 of the sorted md5sum list of every file
#   OPS <label> <mount> OP=N...  RPCs a step cost on a mount (mountstats)
ROOT=$1
result() { if [ "$2" = 0 ]; then echo "RESULT $1 ok $3"; else echo "RESULT $1 FAIL $3"; fi; }

# digest DIR: every regular file's md5, sorted by path, hashed again.
digest() { (cd "$1" && /usr/bin/find . -type f | sort | xargs md5sum | md5sum | cut -d' ' -f1); }

# difflist A B: the paths below A and B that differ, as git diff
# --name-only names them: files differing, files only on one side (a
# directory only on one side stands for every file below it).
difflist() {
  /usr/bin/diff -rq "$1" "$2" | while read -r line; do
    case $line in
      "Files "*) p=${line#Files $1/}; echo "${p%% and *}" ;;
      "Only in "*)
        rest=${line#Only in }; dir=${rest%%: *}; name=${rest#*: }
        case $dir in "$1"*) base=$1 ;; *) base=$2 ;; esac
        rel=${dir#$base}; rel=${rel#/}
        p=${rel:+$rel/}$name
        if [ -d "$base/$p" ]; then (cd "$base" && /usr/bin/find "$p" -type f -o -type l); else echo "$p"; fi ;;
      *) echo "UNPARSED $line" ;;
    esac
  done | sort -u
}

# ops MOUNTPOINT [under]: the RPC counts of that mount (first field of each
# op line of /proc/self/mountstats), as OP=N words; with "under", summed
# over it and every mount below it (the revisions the client automounted
# under .gitnfs/rev).
ops() {
  awk -v m="$1" -v under="${2:-}" '
    $1 == "device" { on = ($5 == m || (under != "" && index($5, m "/") == 1)) }
    on && /^[ \t]*(GETATTR|LOOKUP|ACCESS|READDIRPLUS|READDIR|READ|READLINK|FSINFO|FSSTAT|PATHCONF):/ {
      sub(":", "", $1); n[$1] += $2; total += $2; errs += $10 }
    END {
      split("GETATTR LOOKUP ACCESS READDIRPLUS READDIR READ READLINK FSINFO FSSTAT PATHCONF", order, " ")
      for (i = 1; i <= 10; i++) printf "%s=%d ", order[i], n[order[i]]
      printf "TOTAL=%d ERRORS=%d\n", total, errs }' /proc/self/mountstats
}
total() { echo "$1" | sed 's/.*TOTAL=\([0-9]*\).*/\1/'; }
# step LABEL MOUNT exact|under CMD...: run CMD, print what it cost MOUNT
# (and, with under, the mounts below it).
step() {
  label=$1 m=$2 how=$3; shift 3
  u=""; [ "$how" = under ] && u=under
  before=$(ops "$m" $u)
  "$@" > /dev/null 2>&1
  after=$(ops "$m" $u)
  echo "OPS $label $m $(echo "$before|$after" | awk -F'|' '{
    n = split($1, b, " "); split($2, a, " ")
    for (i = 1; i <= n; i++) { split(b[i], x, "="); split(a[i], y, "="); printf "%s=%d ", x[1], y[2] - x[2] } }')"
}

# First, before anything else touched these paths: the cost of a cold walk
# through the junction, against the same revision mounted by itself, and a
# warm walk of the root mount before and after it (GNU find, as a user's).
echo "== what a walk of .gitnfs/rev/v4 costs, and whether it disturbs the root mount"
step cold-main "$ROOT" exact /usr/bin/find "$ROOT"
step warm-main-before "$ROOT" exact /usr/bin/find "$ROOT"
step cold-rev-v4 "$ROOT" under /usr/bin/find "$ROOT/.gitnfs/rev/v4/"
step warm-main-after "$ROOT" exact /usr/bin/find "$ROOT"
step warm-rev-v4 "$ROOT" under /usr/bin/find "$ROOT/.gitnfs/rev/v4/"
# v4 of the other server, never touched: a cold mount of the same tree.
step cold-mount-v4 "$MNT_Q4" exact /usr/bin/find "$MNT_Q4/"
# v4 mounted by itself from the stable server: one fsid, one superblock
# with .gitnfs/rev/v4 (the client shares it), so already warm.
step shared-mount-v4 "$MNT_R4" exact /usr/bin/find "$MNT_R4/"

# xprt MOUNTPOINT: the local port of the mount's connection (mountstats'
# xprt line): mounts of one server share one connection.
xprt() { awk -v m="$1" '$1 == "device" { on = ($5 == m) } on && $1 == "xprt:" { print $3; exit }' /proc/self/mountstats; }
echo "XPRT $(xprt "$ROOT") $(xprt "$MNT_R1") $(xprt "$MNT_R4") $(xprt "$MNT_R3S") $(xprt "$ROOT/.gitnfs/rev/v4")"

echo "== two revisions of one server at once, and the same two through .gitnfs/rev"
difflist "$MNT_R1" "$MNT_R4" | sed 's/^/DIFF mounts /'
difflist "$ROOT/.gitnfs/rev/v1" "$ROOT/.gitnfs/rev/v4" | sed 's/^/DIFF rev /'
echo "DIGEST r1 $(digest "$MNT_R1")"
echo "DIGEST r4 $(digest "$MNT_R4")"
echo "DIGEST r3src $(digest "$MNT_R3S")"
echo "DIGEST main $(digest "$ROOT")"
echo "DIGEST rev-v1 $(digest "$ROOT/.gitnfs/rev/v1")"
echo "DIGEST rev-origin-feature $(digest "$ROOT/.gitnfs/rev/origin/feature")"

echo "== the hidden directory"
ls -a "$ROOT" | grep -qx .gitnfs; [ $? = 1 ]; result hidden-ls $? "ls -a of the root: $(ls -a "$ROOT" | tr '\n' ' ')"
n=$(/usr/bin/find "$ROOT" | wc -l); echo "COUNT find-root $n"
[ -d "$ROOT/.gitnfs/rev/v1" ]; result lookup $? "cd .gitnfs/rev/v1"
echo "REVLS $(ls "$ROOT/.gitnfs/rev" | tr '\n' ' ')"
echo "REVLS-origin $(ls "$ROOT/.gitnfs/rev/origin" | tr '\n' ' ')"
a=$(stat -c %i "$ROOT/README"); b=$(stat -c %i "$ROOT/.gitnfs/rev/main/README"); c=$(stat -c %i "$ROOT/.gitnfs/rev/v1/README")
[ "$a" != "$b" ] && [ "$b" != "$c" ] && [ "$a" != "$c" ]; result inodes $? "README: root $a, rev/main $b, rev/v1 $c (one st_dev: inode numbers must differ)"
# Another fsid below a directory is a mount point to the Linux client
# (nfs_fhget marks the inode S_AUTOMOUNT): the revision is a submount, with
# its own st_dev, as an export crossed below another is (knfsd's crossmnt).
d0=$(stat -c %d "$ROOT"); d1=$(stat -c %d "$ROOT/.gitnfs/rev/v1"); dg=$(stat -c %d "$ROOT/.gitnfs")
grep -q " $ROOT/.gitnfs/rev/v1 " /proc/self/mountinfo && [ "$d1" != "$d0" ] && [ "$dg" = "$d0" ]
result submount $? "st_dev: root $d0, .gitnfs $dg, .gitnfs/rev/v1 $d1; mountinfo: $(grep " $ROOT/.gitnfs/rev/v1 " /proc/self/mountinfo | cut -d' ' -f5,9,10)"
touch "$ROOT/.gitnfs/rev/v1/x" 2>/tmp/err; grep -q "Read-only file system" /tmp/err; result read-only $? "touch in .gitnfs/rev/v1: $(cat /tmp/err)"

echo "== five revisions of the restarted server: read, wait for restarts, drop the caches, read again"
for q in 1 2 3 4 5; do eval "echo DIGEST q$q \$(digest \$MNT_Q$q)"; done
echo "DIGEST qrev-v2 $(digest "$MNT_QROOT/.gitnfs/rev/v2")"
sleep "${RESTART_WAIT:-8}"
echo 3 > /proc/sys/vm/drop_caches
for q in 1 2 3 4 5; do eval "echo DIGEST q$q-after \$(digest \$MNT_Q$q)"; done
echo "DIGEST qrev-v2-after $(digest "$MNT_QROOT/.gitnfs/rev/v2")"
for q in 1 2 3 4 5; do eval "echo OPS q$q-total \$MNT_Q$q \$(ops \$MNT_Q$q)"; done
echo "OPS qroot-total $MNT_QROOT $(ops "$MNT_QROOT" under)"
echo "== done"
