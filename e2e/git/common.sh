# e2e/git/common.sh — what the guest scripts that run git in a mount share
# (sourced by e2e/git/guest.sh and e2e/merge-git/guest.sh, as
# /extra/common.sh: e2e_git_archive in e2e/lib.sh puts it there). busybox
# sh, as root; git runs as uid 1000 (/init runas). Sourcing it checks that
# (as-user); O is where the outputs go, REF the reference checkout's path;
# the script sets IN (the mount) before compare.
U=1000:1000
REF=/tmp/ref
O=/tmp/out
mkdir -p "$O" && chmod 777 "$O"
export HOME=/tmp/home GIT_PAGER=cat PAGER=cat
export GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@example.com GIT_AUTHOR_DATE='1700000000 +0000'
export GIT_COMMITTER_NAME=e2e GIT_COMMITTER_EMAIL=e2e@example.com GIT_COMMITTER_DATE='1700000000 +0000'
mkdir -p "$HOME" && chown "$U" "$HOME"
FWD="" FWD_PORTS=""
trap 'for p in $FWD; do kill $p 2>/dev/null; done' EXIT

g() { /init runas "$U" /usr/bin/git "$@"; }
as_user() { /init runas "$U" /bin/sh -c "$1"; }
ok() { echo "RESULT $1 ok ${2:-}"; }
bad() { echo "RESULT $1 FAIL ${2:-}"; }
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

g --version | sed 's/^/guest: /'
uid=$(/init runas "$U" id -u)
[ "$uid" = "${U%:*}" ] && ok as-user "git runs as $(/init runas "$U" id)" || bad as-user "runas $U: uid '$uid'"

# measured LABEL MOUNT DIR GIT-ARGS...: git in DIR, its output in $O/LABEL,
# the mount's op counts before and after (MOUNT - : none), its wall time.
measured() {
  label=$1 m=$2 d=$3
  shift 3
  [ "$m" = - ] || echo "OPS $label before $(/init ops "$m")"
  t0=$(ms)
  (cd "$d" && g "$@") > "$O/$label" 2>&1
  rc=$?
  t1=$(ms)
  [ "$m" = - ] || echo "OPS $label after $(/init ops "$m")"
  echo "TIME $label $((t1 - t0)) rc=$rc"
  if [ $rc != 0 ]; then bad "run/$label" "git $* exited $rc: $(head -c 300 "$O/$label")"; fi
}

# same NAME A B: files A and B are equal (and say what A holds).
same() {
  if cmp -s "$2" "$3"; then ok "$1" "$(wc -l < "$2") lines, sha1 $(sha1sum < "$2" | cut -c1-12)"
  else bad "$1" "differ: $(diff "$2" "$3" | head -20 | tr '\n' '|' | head -c 600)"; fi
}

# compare NAME GIT-ARGS...: the same git command in the mount ($IN) and in
# the reference checkout ($REF) prints the same.
compare() {
  name=$1 f=$O/$(echo "$1" | tr / _)
  shift
  (cd "$IN" && g "$@") > "$f.mount" 2>&1
  (cd "$REF" && g "$@") > "$f.ref" 2>&1
  same "$name" "$f.mount" "$f.ref"
}

# git_mounts MOUNT...: each mount's .git ready for git as on the server's
# host. The first read of .git makes the export's admin directory (as
# git's own first read would); its gitnfs-fsmonitor names the server's
# fsmonitor service on the server's loopback, which the guest reaches as
# 10.0.2.2: forward the guest's own 127.0.0.1:PORT there, so that the
# hook, run by git in the guest, finds it where it would on the server's
# host. The hook is the serving binary at its path on the server's host
# (config.worktree's core.fsmonitor, quoted): the copy the archive brought
# (/extra/gitnfs) is put there. Sets COMMON (the repository's common
# directory, shared at its host path). Exits on a failure.
git_mounts() {
  for m in "$@"; do
    gd=$(sed -n 's/^gitdir: //p' "$m/.git")
    [ -n "$gd" ] || { bad "gitfile" "$m/.git: $(head -c 200 "$m/.git")"; exit 1; }
    echo "guest: $m/.git names $gd"
    for _ in $(seq 100); do [ -s "$gd/gitnfs-fsmonitor" ] && break; sleep 0.1; done
    addr=$(cat "$gd/gitnfs-fsmonitor" 2>/dev/null)
    [ -n "$addr" ] || { bad "fsmonitor-addr" "no $gd/gitnfs-fsmonitor"; exit 1; }
    port=${addr##*:}
    case " $FWD_PORTS " in *" $port "*) ;; *)
      /init forward "127.0.0.1:$port" "10.0.2.2:$port" > /dev/null 2>&1 &
      FWD="$FWD $!"
      FWD_PORTS="$FWD_PORTS $port" ;;
    esac
    echo "guest: $(ls -ln "$gd" | tr -s ' ' | cut -d' ' -f3,4,9 | tr '\n' ' ')"
  done
  COMMON=$(cd "$gd/../.." && pwd)
  hook=$(g config --file "$gd/config.worktree" core.fsmonitor | sed -n "s/^'\([^']*\)'.*/\1/p")
  [ -n "$hook" ] || { bad fsmonitor-hook "no core.fsmonitor in $gd/config.worktree: $(tr '\n' '|' < "$gd/config.worktree")"; exit 1; }
  mkdir -p "${hook%/*}" && cp /extra/gitnfs "$hook" && chmod 755 "$hook"
  echo "guest: the fsmonitor hook is $hook"
  echo "guest: the common directory is $COMMON, owned by $(stat -c %u:%g "$COMMON")"
}
