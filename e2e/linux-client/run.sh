#!/usr/bin/env bash
# run.sh — boot Debian's Linux 6.1 kernel under qemu (TCG, no KVM), mount an
# NFSv3 server that listens on the HOST's loopback with the guest kernel's
# own NFS client, run workloads on fresh mounts and print the client's
# per-op RPC census (from /proc/self/mountstats) for each workload.
#
# usage: run.sh --port PORT [options]
#   --port PORT            NFS port of the server on 127.0.0.1 (required)
#   --mountport PORT       MOUNT protocol port (default: same as --port)
#   --export PATH          export path to mount (default /)
#   --subdir DIR           run the workloads in DIR below the mount point
#   --workloads LIST       comma-separated (default find_names,find_type_f,ls_lR,stat_all,cat_all,warm_ls_lR)
#                          known: find_names find_type_f ls_lR ls_R du_s tar_all stat_all cat_all
#                                 go_names warm_ls_lR warm_find bb_find bb_ls_lR
#   --opts "a=b,c"         extra mount options appended to the base ones
#   --base-opts "..."      replace the base options (default vers=3,proto=tcp,mountproto=tcp,nolock;
#                          port=,mountport=,addr= are always added)
#   --warm-sleep SEC       sleep between the priming and the measured pass of warm_* (default 0)
#   --no-count             skip the reference count walk (then per_entry ratios are NA)
#   --no-drop-caches       do not drop guest caches between workloads
#   --timeout SEC          hard limit for the whole VM run (default 1800)
#   --workload-timeout SEC limit for one workload inside the guest (default 900)
#   --mem MB               guest memory (default 1024)
#   --smp N                guest CPUs (default 1)
#   --outdir DIR           where console.log, results.txt, census.json go
#                          (default build/runs/<timestamp>)
#   --json FILE            also copy the JSON report to FILE
#   --label TEXT           free-form label stored in the JSON report
#   --manifest             cat_all also writes one "manifest" line per file and symlink
#                          (path, sha256 / mode, target) to results.txt
#   --verbose              stream the guest console to stderr while running
#   --no-setup             do not run setup.sh first
#   --extra-cpio FILE      a newc cpio archive unpacked over the initramfs (the kernel
#                          unpacks concatenated archives): programs for the script workload
#   --script PATH          guest path the `script` workload runs with /bin/sh (arg 1: the mount)
#   --mount NAME=PORT[:EXPORT]
#                          the script workload also mounts 127.0.0.1:PORT's EXPORT (default:
#                          the --export path) at /mnt/NAME (env MNT_NAME); repeatable
#   --share HOSTPATH       share the host directory HOSTPATH with the guest read-write over
#                          virtio-9p (qemu -virtfs, security_model=passthrough: the host's
#                          owners and modes), mounted by /init at the same path before any
#                          workload; repeatable. For a path the server writes into what it
#                          serves (the .git file's admin directory: e2e/git.sh)
#
# stdout: the census, one record per line, e.g.
#   workload=ls_lR status=ok wall_ms=... total_rpcs=... tree_entries=... ...
#   workload=ls_lR op=READDIRPLUS count=... per_entry=... rtt_ms=... exec_ms=...
# stderr: progress, a summary table and errors.
# exit: 0 ok; 1 usage/setup error; 3 server unreachable or not speaking
#       NFSv3; 4 the guest reported a fatal error or some workload failed
#       (the census of the others is still printed); 5 the guest produced no
#       complete census (see console.log); 124 the VM hit --timeout.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=${LINUX_CLIENT_BUILD:-$HERE/build}

PORT="" MOUNTPORT="" EXPORT="/" SUBDIR="" OPTS="" BASEOPTS=""
WORKLOADS="find_names,find_type_f,ls_lR,stat_all,cat_all,warm_ls_lR"
WARM_SLEEP=0 COUNT=true DROP=true TIMEOUT=1800 WTIMEOUT=900 MEM=1024 SMP=1
OUTDIR="" JSON="" LABEL="" VERBOSE=0 SETUP=1 MANIFEST=false
EXTRA_CPIO="" SCRIPT="" MOUNTS=() SHARES=()

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
die() { echo "run.sh: ERROR: $1" >&2; exit "${2:-1}"; }

while (($#)); do
  case "$1" in
    --port) PORT=$2; shift 2 ;;
    --mountport) MOUNTPORT=$2; shift 2 ;;
    --export) EXPORT=$2; shift 2 ;;
    --subdir) SUBDIR=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --opts) OPTS=$2; shift 2 ;;
    --base-opts) BASEOPTS=$2; shift 2 ;;
    --warm-sleep) WARM_SLEEP=$2; shift 2 ;;
    --no-count) COUNT=false; shift ;;
    --no-drop-caches) DROP=false; shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --workload-timeout) WTIMEOUT=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --outdir) OUTDIR=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --label) LABEL=$2; shift 2 ;;
    --manifest) MANIFEST=true; shift ;;
    --verbose|-v) VERBOSE=1; shift ;;
    --no-setup) SETUP=0; shift ;;
    --extra-cpio) EXTRA_CPIO=$2; shift 2 ;;
    --script) SCRIPT=$2; shift 2 ;;
    --mount) MOUNTS+=("$2"); shift 2 ;;
    --share) SHARES+=("$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ $PORT =~ ^[0-9]+$ ]] || { usage >&2; die "--port PORT is required"; }
MOUNTPORT=${MOUNTPORT:-$PORT}
[[ $MOUNTPORT =~ ^[0-9]+$ ]] || die "--mountport must be a number"
for n in WARM_SLEEP TIMEOUT WTIMEOUT MEM SMP; do
  [[ ${!n} =~ ^[0-9]+$ ]] || die "--$(echo "$n" | tr 'A-Z_' 'a-z-') must be a number"
done
[[ $WORKLOADS =~ ^[A-Za-z0-9_,]+$ ]] || die "--workloads must be a comma-separated list of names"
[[ -z $EXTRA_CPIO || -f $EXTRA_CPIO ]] || die "--extra-cpio $EXTRA_CPIO: no such file"
jstr() { # JSON string literal
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}
  printf '"%s"' "$s"
}
EXTRA_PORTS=()
mounts_json=""
for m in "${MOUNTS[@]}"; do
  [[ $m =~ ^([a-z][a-z0-9_]*)=([0-9]+)(:(/.*))?$ ]] \
    || die "--mount $m: want NAME=PORT or NAME=PORT:/EXPORT (NAME: lower case, digits, _)"
  EXTRA_PORTS+=("${BASH_REMATCH[2]}")
  mounts_json+="${mounts_json:+,}{\"name\":\"${BASH_REMATCH[1]}\",\"port\":${BASH_REMATCH[2]}"
  [[ -n ${BASH_REMATCH[4]} ]] && mounts_json+=",\"export\":$(jstr "${BASH_REMATCH[4]}")"
  mounts_json+="}"
done

shares_json=""
VIRTFS=()
for i in "${!SHARES[@]}"; do
  p=${SHARES[$i]}
  [[ $p == /* && -d $p ]] || die "--share $p: not an absolute path of a directory"
  [[ $p != *$'\n'* ]] || die "--share: a newline in the path"
  shares_json+="${shares_json:+,}{\"tag\":\"share$i\",\"path\":$(jstr "$p")}"
  VIRTFS+=(-virtfs "local,path=${p//,/,,},mount_tag=share$i,security_model=passthrough,id=share$i")
done

T0=$(date +%s.%N)

if ((SETUP)); then
  "$HERE/setup.sh" || die "setup.sh failed"
fi
[[ -f $BUILD/vmlinuz && -f $BUILD/initramfs.cpio ]] || die "no kernel/initramfs in $BUILD (run setup.sh)"
KERNEL=$BUILD/vmlinuz
[[ -f $BUILD/vmlinux ]] && KERNEL=$BUILD/vmlinux   # uncompressed, PVH entry: ~3.5 s faster
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not installed (run setup.sh)"

# ------------------------------------------------ is the server reachable?
for p in $(printf '%s\n' "$PORT" "$MOUNTPORT" "${EXTRA_PORTS[@]}" | sort -u); do
  if ! timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
    die "nothing accepts TCP connections on 127.0.0.1:$p — start the NFS server first (the guest reaches the host's loopback as 10.0.2.2)" 3
  fi
done

# ------------------------------------------------------------- run the VM
if [[ -z $OUTDIR ]]; then
  OUTDIR=$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$$
fi
mkdir -p "$OUTDIR"
CONSOLE=$OUTDIR/console.log
RESULTS=$OUTDIR/results.txt
: > "$CONSOLE"; : > "$RESULTS"

wl_json=$(printf '%s' "$WORKLOADS" | awk -F, '{for(i=1;i<=NF;i++) if($i!="") printf "%s\"%s\"", (n++?",":""), $i}')
CFG="{\"server\":\"10.0.2.2\",\"port\":$PORT,\"mountport\":$MOUNTPORT,\"export\":$(jstr "$EXPORT"),\"subdir\":$(jstr "$SUBDIR"),\"workloads\":[$wl_json],\"opts\":$(jstr "$OPTS"),\"warm_sleep\":$WARM_SLEEP,\"count\":$COUNT,\"drop_caches\":$DROP,\"workload_timeout\":$WTIMEOUT,\"mount_timeout\":60,\"label\":$(jstr "$LABEL"),\"manifest\":$MANIFEST"
[[ -n $BASEOPTS ]] && CFG="$CFG,\"base_opts\":$(jstr "$BASEOPTS")"
[[ -n $SCRIPT ]] && CFG="$CFG,\"script\":$(jstr "$SCRIPT")"
[[ -n $mounts_json ]] && CFG="$CFG,\"mounts\":[$mounts_json]"
[[ -n $shares_json ]] && CFG="$CFG,\"shares\":[$shares_json]"
CFG="$CFG}"
CFG64=$(printf '%s' "$CFG" | base64 -w0)
APPEND="console=ttyS0,115200 loglevel=4 panic=-1 mitigations=off nokaslr tsc=reliable census.cfg=$CFG64"
((${#APPEND} < 2000)) || die "configuration too long for the kernel command line"

INITRD=$BUILD/initramfs.cpio
if [[ -n $EXTRA_CPIO ]]; then
  INITRD=$OUTDIR/initrd.cpio
  cat "$BUILD/initramfs.cpio" "$EXTRA_CPIO" > "$INITRD"
fi

QEMU=(qemu-system-x86_64
  -nodefaults -no-user-config -accel tcg -machine pc -cpu qemu64 -smp "$SMP" -m "$MEM"
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND"
  -display none -monitor none -no-reboot
  -netdev user,id=n0 -device virtio-net-pci,netdev=n0
  -chardev "file,id=con,path=${CONSOLE//,/,,}" -serial chardev:con
  -chardev "file,id=res,path=${RESULTS//,/,,}" -serial chardev:res
  "${VIRTFS[@]}")
printf '%q ' "${QEMU[@]}" > "$OUTDIR/qemu.cmd"; echo >> "$OUTDIR/qemu.cmd"

echo "run.sh: booting $(cat "$BUILD/kernel.pkg") under TCG; server 127.0.0.1:$PORT (guest 10.0.2.2), workloads $WORKLOADS; logs in $OUTDIR" >&2
TAILPID=""
if ((VERBOSE)); then
  tail -n +1 -F "$CONSOLE" >&2 2>/dev/null &
  TAILPID=$!
fi
TQ0=$(date +%s.%N)
set +e
timeout --kill-after=10 "$TIMEOUT" "${QEMU[@]}" > "$OUTDIR/qemu.out" 2>&1
QRC=$?
set -e
TQ1=$(date +%s.%N)
if [[ -n $TAILPID ]]; then sleep 0.3; kill "$TAILPID" 2>/dev/null || true; wait "$TAILPID" 2>/dev/null || true; fi

tr -d '\r' < "$RESULTS" > "$RESULTS.tmp" && mv "$RESULTS.tmp" "$RESULTS"
grep '^json ' "$RESULTS" | head -1 | cut -c6- > "$OUTDIR/census.json" || true
[[ -s $OUTDIR/census.json ]] || rm -f "$OUTDIR/census.json"
if [[ -n $JSON && -f $OUTDIR/census.json ]]; then cp "$OUTDIR/census.json" "$JSON"; fi

# The census on stdout (everything but the JSON and manifest lines).
grep -v -e '^json ' -e '^manifest ' "$RESULTS" || true
QEMU_S=$(awk -v a="$TQ0" -v b="$TQ1" 'BEGIN{printf "%.1f", b-a}')
TOTAL_S=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
echo "host qemu_wall_s=$QEMU_S total_wall_s=$TOTAL_S qemu_rc=$QRC outdir=$OUTDIR"

# ---------------------------------------------------------------- summary
{
  echo "---- summary (per entry = per entry of the reference walk) ----"
  awk '
    function kv(   i, p) { delete v; for (i = 1; i <= NF; i++) { p = index($i, "="); if (p) v[substr($i, 1, p - 1)] = substr($i, p + 1) } }
    /^tree / { kv(); printf "tree: %s entries (%s dirs, %s files, %s symlinks, %s DT_UNKNOWN), count walk %.0f ms\n", v["entries"], v["dirs"], v["files"], v["symlinks"], v["dt_unknown"], v["wall_ms"] }
    /^workload=.* status=/ { kv(); printf "%-12s %-6s wall %9.0f ms  rpcs %7s  (%s/entry)\n", v["workload"], v["status"], v["wall_ms"], v["total_rpcs"], v["rpcs_per_entry"] }
    /^workload=.* error=/ { print "    " $0 }
    /^workload=.* op=/ { kv(); printf "    %-12s %-12s %8s  %s/entry  %s/dir  rtt %sms%s\n", v["workload"], v["op"], v["count"], v["per_entry"], v["per_dir"], v["rtt_ms"], (v["errors"] > 0 ? "  ERRORS " v["errors"] : "") }
  ' "$RESULTS"
  echo "host: qemu ${QEMU_S}s, total ${TOTAL_S}s"
} >&2

if ((QRC == 124 || QRC == 137)); then
  echo "run.sh: ERROR: the VM did not finish within --timeout $TIMEOUT s; console log: $CONSOLE" >&2
  tail -n 20 "$CONSOLE" >&2
  exit 124
fi
if grep -q '^fatal ' "$RESULTS"; then
  echo "run.sh: ERROR: guest reported: $(grep '^fatal ' "$RESULTS" | head -1)" >&2
  if grep -q -E "unreachable|does not answer" "$RESULTS"; then exit 3; fi
  exit 4
fi
if ! grep -q '^end status=' "$RESULTS"; then
  echo "run.sh: ERROR: the guest produced no complete census (qemu rc=$QRC); last console lines ($CONSOLE):" >&2
  tail -n 30 "$CONSOLE" >&2
  [[ -s $OUTDIR/qemu.out ]] && { echo "qemu said:" >&2; tail -n 10 "$OUTDIR/qemu.out" >&2; }
  exit 5
fi
if grep -q '^end status=partial' "$RESULTS"; then
  echo "run.sh: WARNING: some workloads failed (see error= lines and $CONSOLE)" >&2
  exit 4
fi
exit 0
