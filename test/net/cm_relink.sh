#!/bin/bash
# A program of a device deleted and added again (`uroce link del`, `link
# add`, same name) holds its names in the old device's lock file, where
# they are free: its rdma_listen must fail (ENODEV), not take the port's
# socket from a listener of the new device. cm_relisten binds to the port
# on the old device and waits; the device is made again and rping listens
# on the port there; then cm_relisten listens. rping's socket file must be
# the one it made, and a client from namespace b must still reach it.
#   cm_relink.sh BUILD_DIR
# Exit 77 (skip) without root, namespaces or rping.
set -u
source "$(dirname "$0")/lib.sh" "$1"
ur_need rdmacm-utils rping
prog=$build/test/cm_relisten

ur_test_pair cr
mkfifo "$log/go"
ur_in "$p-a" "$prog" "$net.1" "$port" <"$log/go" >"$log/old" 2>&1 &
opid=$!
exec 3>"$log/go" # held open: cm_relisten reads its line when we write it
for ((i = 0; i < 100; i++)); do
	grep -q bound "$log/old" && break
	kill -0 $opid 2>/dev/null || break
	sleep 0.1
done
grep -q bound "$log/old" || { bad "cm_relisten did not bind: $(cat "$log/old")"; exit 1; }

ip netns exec "$p-a" "$UROCE" link del uroce0 &&
	ip netns exec "$p-a" "$UROCE" link add uroce0 netdev "${p}a0" port af_packet ||
	{ bad "could not delete and add the device again"; exit 1; }
ur_in "$p-a" timeout 30 rping -s -a "$net.1" -p "$port" -C 1 >"$log/srv" 2>&1 &
spid=$!
ur_server_up "$p-a" $spid rping -s -p "$port" || { bad "rping did not listen: $(cat "$log/srv")"; exit 1; }
file=$(ip netns exec "$p-a" ss -Hxl | grep -o "/[^ ]*/cm-port-[0-9]*-$port" | head -1)
before=$(ip netns exec "$p-a" stat -c %i "$file" 2>/dev/null)

echo go >&3
wait $opid
rc=$?
after=$(ip netns exec "$p-a" stat -c %i "$file" 2>/dev/null)
if [ $rc -ne 0 ]; then
	bad "the old device's program listened on the port: $(grep listen "$log/old")"
else
	ok "the old device's program could not listen: $(grep listen "$log/old")"
fi
if [ -z "$before" ] || [ "$before" != "$after" ]; then
	bad "rping's socket $file changed (inode $before, now ${after:-none})"
else
	ok "rping's socket is the one it made"
fi
if ur_in "$p-b" timeout 10 rping -c -a "$net.1" -p "$port" -C 1 >"$log/cli" 2>&1; then
	ok "a client reaches the new device's listener"
else
	bad "a client could not reach the new device's listener: $(tail -2 "$log/cli")"
	kill $spid 2>/dev/null
fi
wait $spid
exec 3>&-
exit $((fails > 0))
