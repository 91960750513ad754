# guest.sh: runs in the linux-client guest (busybox sh) as the `script`
# workload of e2e/mounts.sh. For each kind of export K (plain, merge,
# overlay) the guest has two mounts of one server: $MNT_K, its root, and
# $MNT_KSUB, the subdirectory $SUB mounted by itself (127.0.0.1:/$SUB, spelled
# differently for each kind). It reports, and the host judges, one line a
# check:   RESULT <kind> <check> ok|FAIL <detail>
SUB=src/lib
result() { # result KIND CHECK COND DETAIL
  if [ "$3" = 0 ]; then echo "RESULT $1 $2 ok $4"; else echo "RESULT $1 $2 FAIL $4"; fi
}
# listing DIR: every entry below DIR with its type, mode, size, owner and
# symlink target, relative to DIR (no inode numbers or times: equal across
# two mounts of one export whatever the client cached).
# GNU find (busybox's, which ash prefers, has no -printf).
listing() { (cd "$1" && /usr/bin/find . -printf '%y %m %s %U %G %p -> %l\n' | sort); }
# contents DIR: the md5 of every regular file below DIR.
contents() { (cd "$1" && /usr/bin/find . -type f | sort | xargs md5sum); }

for K in plain merge overlay; do
  eval ROOTM=\$MNT_$(echo $K | tr a-z A-Z)
  eval SUBM=\$MNT_$(echo $K | tr a-z A-Z)SUB
  echo "== $K: $SUBM (the subdirectory mount) against $ROOTM/$SUB"
  listing "$ROOTM/$SUB" > /tmp/want.list; listing "$SUBM" > /tmp/got.list
  # Both empty would be equal too: src/lib has 9 entries in each kind.
  n=$(wc -l < /tmp/got.list)
  cmp -s /tmp/want.list /tmp/got.list && [ "$n" -ge 9 ]; result $K listing $? "$n entries"
  diff /tmp/want.list /tmp/got.list | head -n 5
  contents "$ROOTM/$SUB" > /tmp/want.md5; contents "$SUBM" > /tmp/got.md5
  n=$(wc -l < /tmp/got.md5)
  cmp -s /tmp/want.md5 /tmp/got.md5 && [ "$n" -ge 5 ]; result $K contents $? "$n files"
  [ "$(stat -c %i "$SUBM")" = "$(stat -c %i "$ROOTM/$SUB")" ]; result $K fileid $? "root of the mount: $(stat -c %i "$SUBM"), $SUB in the root mount: $(stat -c %i "$ROOTM/$SUB")"
  # ".." of the mount's root is the covered directory's parent (/mnt): the
  # client resolves it itself and never walks up into the export.
  up=$(cd -P "$SUBM/.." && pwd -P)
  [ "$up" = /mnt ] && [ -d "$SUBM/../$(basename "$ROOTM")" ]; result $K dotdot $? "cd $SUBM/.. is $up"
  # Below the mount's root, ".." is the export's own parent directory.
  [ "$(stat -c %i "$SUBM/deep/..")" = "$(stat -c %i "$SUBM")" ]; result $K deep-dotdot $? "$SUBM/deep/.."
done

echo "== overlay: written through one mount, seen through the other"
echo "from the subdirectory mount" > "$MNT_OVERLAYSUB/new.txt"
[ "$(cat "$MNT_OVERLAY/$SUB/new.txt")" = "from the subdirectory mount" ]; result overlay write-sub-read-root $? "$SUB/new.txt"
mkdir "$MNT_OVERLAY/$SUB/made" && echo "from the root mount" > "$MNT_OVERLAY/$SUB/made/f"
[ "$(cat "$MNT_OVERLAYSUB/made/f")" = "from the root mount" ]; result overlay write-root-read-sub $? "$SUB/made/f"
rm "$MNT_OVERLAYSUB/a.c"
[ ! -e "$MNT_OVERLAY/$SUB/a.c" ]; result overlay remove-sub $? "$SUB/a.c removed through the subdirectory mount"
echo "== done"
