#!/bin/bash
# The connection manager does not hold the program's rdma_cm calls while it
# waits on the network: a REQ from an address that does not answer ARP
# (namespace b's kernel told not to, arp_ignore=8) makes the listener's CM
# look for the peer's MAC (ARP, 2 s before it gives up) before it can make
# the passive id's AH; cm_stall in namespace a meanwhile times its own
# create/bind/destroy calls every 20 ms, and none may take 500 ms. rping in
# namespace b sends the REQs (it fails, as it should: nobody can answer it).
#   cm_unlocked.sh BUILD_DIR
# Exit 77 (skip) without root, namespaces or rping.
set -u
source "$(dirname "$0")/lib.sh" "$1"
ur_need rdmacm-utils rping
prog=$build/test/cm_stall

ur_test_pair cu
ip netns exec "$p-b" sysctl -qw net.ipv4.conf.all.arp_ignore=8 net.ipv4.conf."${p}b0".arp_ignore=8
ur_in "$p-a" env UROCE_DEBUG=1 "$prog" -a "$net.1" -p "$port" -t 8 >"$log/srv" 2>&1 &
spid=$!
sleep 1
ur_in "$p-b" timeout 6 rping -c -a "$net.1" -p "$port" -C 1 >"$log/cli" 2>&1
wait $spid
rc=$?
if ! grep -q "does not answer" "$log/srv"; then
	bad "the listener never waited for a neighbour (the case was not made)"
elif [ $rc -ne 0 ]; then
	bad "rdma_cm calls stalled while the CM waited for ARP: exit $rc"
else
	ok "rdma_cm calls went on while the CM waited for ARP"
fi
grep -E "cm_stall|does not answer" "$log/srv" | sed 's/^/    /'
exit $((fails > 0))
