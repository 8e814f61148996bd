#!/bin/bash
# One process writing to two others on one device, one of them stopped
# (SIGSTOP): the WRITEs to the other go on (test/verbs/peer_fanout.c: the
# engine's cap on unacknowledged packets is per peer, transport/peer.c).
#   fanout.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
source "$(dirname "$0")/lib.sh" "$1"
fan=$build/test/peer_fanout

# stat NAME: one counter of uroce0 in $p-a ("unknown" if there is no such counter)
stat() {
	ip netns exec "$p-a" "$UROCE" stat uroce0 -a | awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print "unknown" }'
}

ur_test_pair fo
# "${in_a[@]}" CMD &: $! is CMD itself (ip, env and bash exec), to stop it
in_a=(ip netns exec "$p-a" env UROCE="$UROCE" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _)
mkdir -p "$log/fan"
"${in_a[@]}" "$fan" serve "$log/fan" b 30 >"$log/fan_b" 2>&1 &
bpid=$!
"${in_a[@]}" "$fan" serve "$log/fan" c 30 >"$log/fan_c" 2>&1 &
cpid=$!
"${in_a[@]}" "$fan" send "$log/fan" b c 20 >"$log/fan_s" 2>&1 &
fpid=$!
for ((i = 0; i < 200; i++)); do
	[ -e "$log/fan/ready" ] && break
	sleep 0.1
done
sleep 1
kill -STOP "$bpid"
touch "$log/fan/stopped"
wait "$fpid"
rc=$?
kill -CONT "$bpid"
kill "$bpid" "$cpid" 2>/dev/null
wait "$bpid" "$cpid" 2>/dev/null
if [ $rc = 0 ]; then
	ok "one receiver stopped, the other's WRITEs went on"
else
	bad "one receiver stopped, the other's WRITEs stalled (exit $rc)"
fi
sed 's/^/    /' "$log/fan_s"
echo "    dp_tx_loopback $(stat dp_tx_loopback), dp_tx_loopback_drops $(stat dp_tx_loopback_drops)"
exit $((fails > 0))
