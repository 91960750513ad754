# guest.sh: runs in the linux-client guest (busybox sh) as the `script`
# workload of e2e/cthon.sh. $1 is the overlay export (writable), $MNT_RO
# the same revision served read-only, $MNT_MERGE a merge view. cthon04's
# binaries are in /extra/cthon/{basic,special}, our probes in /extra.
# It reports, and the host judges: one line per test,
#   RESULT <suite> <test> rc=<exit code> erofs=<1 if it printed "Read-only file system"> s=<seconds>
# after the test's own output (prefixed with "  | ").
OV=$1
C=/extra/cthon
umask 0

run() { # run SUITE TEST CMD...: the test's output, then its RESULT line
  suite=$1 test=$2
  shift 2
  t0=$(date +%s)
  "$@" > /tmp/out 2>&1
  rc=$?
  t1=$(date +%s)
  sed 's/^/  | /' /tmp/out
  erofs=0
  grep -q 'Read-only file system' /tmp/out && erofs=1
  echo "RESULT $suite $test rc=$rc erofs=$erofs s=$((t1 - t0))"
}

echo "== cthon basic against the overlay ($OV/cthon-basic)"
export NFSTESTDIR=$OV/cthon-basic
cd $C/basic
for t in test1 test2 test3 test4 test5 test6 test7 test8 test9; do
  run basic $t ./$t -t
done

echo "== cthon special against the overlay ($OV/cthon-special), run from there as cthon's runtests does"
S=$OV/cthon-special
mkdir -p $S && cp $C/special/* $S/ && cd $S || { echo "RESULT special setup rc=1 erofs=0"; exit 1; }
run special op_unlk env TMPDIR= ./op_unlk
run special op_ren env TMPDIR= ./op_ren
run special op_chmod env TMPDIR= ./op_chmod
run special dupreq ./dupreq 100 testfile
run special excltest ./excltest
run special negseek ./negseek testfile
run special rename ./rename 100
run special truncate ./truncate
run special holey ./holey
run special nfsidem ./nfsidem 50 testdir
run special rewind ./rewind
run special telldir ./telldir
run special freesp ./freesp
run special bigfile ./bigfile -s 30 bigfile$$
run special bigfile2 ./bigfile2 bigfile$$
cd /

echo "== cthon basic against the read-only export ($MNT_RO/cthon-ro, -n: use the existing directory)"
export NFSTESTDIR=$MNT_RO/cthon-ro
cd $C/basic
for t in test3 test9 test1 test7 test8; do
  run ro $t ./$t -n -t
done
cd /
run ro-probe erofs /extra/erofs $MNT_RO/cthon-ro/tracked.txt $MNT_RO/cthon-ro $MNT_RO/cthon-ro/sub

echo "== basic test4 and test5: the overlay again, then --async ($MNT_ASYNC), back to back"
cd $C/basic
for t in test4 test5; do
  NFSTESTDIR=$OV/cthon-again run sync-again $t ./$t -t
  NFSTESTDIR=$MNT_ASYNC/cthon-async run async $t ./$t -t
done
cd /

echo "== telldir/seekdir through the kernel client, every kind of export"
run seekdir overlay /extra/seekdir $OV/big 3800 500
run seekdir plain /extra/seekdir $MNT_RO/big 3300
run seekdir merge /extra/seekdir $MNT_MERGE/big 3500
echo "== done"
