#!/usr/bin/env bash
# Restarts under an active kernel-client mount: the server is stopped and
# started again every few seconds while the Linux client walks, reads and
# re-walks the tree on its mounts. e2e/restarter holds the listening socket
# and hands it to each new server (socket activation), so no mount or call
# is ever refused; a call in flight when a server stops is resent. Handles are computed from paths, not
# stored, so every handle the client holds from before a restart must keep
# working: the suite's "no op errors" checks then mean zero ESTALE.
#
#   e2e/restart.sh [--shape tiny|full] [--every SECONDS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHAPE=tiny EVERY=2
while (($#)); do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --every) EVERY=$2; shift 2 ;;
    *) echo "restart.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
WORK=$(mktemp -d /tmp/gitnfs-restart-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
(cd "$ROOT" && go build -o "$WORK/gitnfs" ./cmd/gitnfs && go build -o "$WORK/restarter" ./e2e/restarter)
# warm_ls_lR lists the tree, waits, and lists it again on the same mount:
# the second pass revalidates with handles from before several restarts.
# A call in flight when the server stops is sent again once it is back:
# expected. Any error reply (ESTALE above all) or timeout still fails.
"$HERE/run.sh" --shape "$SHAPE" --workloads ls_lR,cat_all,warm_ls_lR --allow-retransmits \
  --server-cmd "$WORK/restarter -listen 127.0.0.1:{port} -every ${EVERY}s -log $WORK/restarts.log -- $WORK/gitnfs serve --repo {repo} --rev {rev} --listen 127.0.0.1:{port} --no-git-dir" \
  -- --warm-sleep 5 || { echo "restart.sh: FAILED with restarts every ${EVERY}s" >&2; exit 1; }
n=$(grep -c '^restart' "$WORK/restarts.log" || true)
echo "restart.sh: the server restarted $n times under the mounts; every check above held" >&2
((n >= 3)) || { echo "restart.sh: only $n restarts happened: the walk was too short to test anything" >&2; exit 1; }
