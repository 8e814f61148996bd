#!/bin/bash
# Memory windows end to end: mw_check (stock libibverbs only) between two
# network namespaces joined by a veth pair, a uroce device in each: type 1
# and type 2 binds (ibv_bind_mw, IBV_WR_BIND_MW, ibv_wr_bind_mw), WRITE and
# READ through the windows' R_Keys, SEND with Invalidate and LOCAL_INV, the
# access refused after each and out of bounds, a bind refused.
#   mw.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
# shellcheck source=test/net/lib.sh
source "$(dirname "$0")/../net/lib.sh" "$1"
mc=$build/test/mw_check
[ -x "$mc" ] || { echo "FAIL: $mc is missing (build first)"; exit 1; }

# namespaces tm<pid>-a/-b, devices uroce0, $net, $port and $log: lib.sh
ur_test_pair tm
t0=$(date +%s.%N)
ur_in "$p-a" env ${MW_CAPTURE:+UROCE_CAPTURE="$MW_CAPTURE"} timeout -s KILL 60 "$mc" --server \
	--port "$port" >"$log/srv" 2>&1 &
spid=$!
ur_in "$p-b" timeout -s KILL 60 "$mc" --client "$net.1" --port "$port" >"$log/cli" 2>&1 &
wait $!
rc_c=$?
wait "$spid"
rc_s=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
sed 's/^/  /' "$log/srv" "$log/cli"
counters=$(ip netns exec "$p-a" "$UROCE" stat uroce0 | awk '$1 ~ /^(mw_|resp_mw_refused|resp_remote_access_errors)/ { printf "%s %s, ", $1, $2 }')
echo "  server counters: ${counters%, }"
if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ]; then
	echo "FAIL mw_check (client exit $rc_c, server exit $rc_s, $secs s)"
	exit 1
fi
echo "ok   mw_check ($secs s)"
