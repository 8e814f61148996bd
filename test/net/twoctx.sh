#!/bin/bash
# Two contexts of one device in one process reach each other through the
# device's GID (test/bench/twoctx.c: a UD datagram and an RC SEND), over
# memif and af_packet, as on a NIC: the contexts of a process share one
# engine and port (provider/nic.c; it failed while each context had a
# dataplane of its own).
# One namespace holds both ends of a veth. First the control, which must
# pass: context A on uroce0 (memif server on one end), context B on
# uroce1 (memif client on the other). Then one device, two contexts: the
# memif server uroce0 alone, then uroce0 over af_packet.
#   twoctx.sh BUILD_DIR
# Exits 0 if every check passed, 1 if a context missed the other, 77 without
# root, 99 (meson's hard error, not flipped by should_fail) if the namespace,
# the devices or the control failed.
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$1"
twoctx=$build/test/twoctx
[ -x "$twoctx" ] || { echo "ERROR: $twoctx is missing (build first)"; exit 99; }

p=tc$$
p=${p:0:8}
ns=$p-a
sock=/dev/shm/uroce-memif-$p.sock
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	ip netns exec "$ns" "$UROCE" link del uroce0 2>/dev/null
	ip netns exec "$ns" "$UROCE" link del uroce1 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -f "$sock"
}
trap cleanup EXIT INT TERM
net=10.61.$((RANDOM % 200 + 20))
ip netns add "$ns" && ip -n "$ns" link add "${p}a0" type veth peer name "${p}b0" &&
	ip -n "$ns" addr add "$net.1/24" dev "${p}a0" && ip -n "$ns" addr add "$net.2/24" dev "${p}b0" &&
	ip -n "$ns" link set "${p}a0" mtu 9000 up && ip -n "$ns" link set "${p}b0" mtu 9000 up &&
	ip -n "$ns" link set lo up || { echo "ERROR: setting up the namespace"; exit 99; }

# in_ns CMD...: CMD in the namespace with the uroce environment
in_ns() { ip netns exec "$ns" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _ "$@"; }

# check PORT: twoctx on uroce0 alone; a context that misses the other is a
# failure, anything else (exit 2, a crash) an error
check() {
	local rc=0
	echo "-- one device, two contexts: uroce0 over $1"
	in_ns "$twoctx" -d uroce0 || rc=$?
	case $rc in
	0) ok "$1: two contexts of uroce0 reach each other" ;;
	1) bad "$1: two contexts of uroce0 do not reach each other" ;;
	*) echo "ERROR: twoctx -d uroce0 over $1 exited $rc"; exit 99 ;;
	esac
}

ip netns exec "$ns" "$UROCE" link add uroce0 netdev "${p}a0" port "memif:role=server,id=0,socket=$sock" &&
	ip netns exec "$ns" "$UROCE" link add uroce1 netdev "${p}b0" port "memif:role=client,id=0,socket=$sock" ||
	{ echo "ERROR: adding the memif devices"; exit 99; }
echo "-- control: context A on uroce0, B on uroce1 (two devices, memif between them)"
in_ns "$twoctx" -d uroce0 -D uroce1 || { echo "ERROR: the control failed: twoctx itself is broken"; exit 99; }

check memif
ip netns exec "$ns" "$UROCE" link del uroce1 && ip netns exec "$ns" "$UROCE" link del uroce0 &&
	ip netns exec "$ns" "$UROCE" link add uroce0 netdev "${p}a0" ||
	{ echo "ERROR: replacing uroce0 by an af_packet device"; exit 99; }
check af_packet
[ "$fails" = 0 ]
