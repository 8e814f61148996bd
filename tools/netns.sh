# Two network namespaces joined by a veth pair, with a uroce device in each:
# the default playground of the demo, the tests and the benchmarks.
# Source this file, then:
#   ur_pair_up PREFIX SUBNET MTU [PORT_A PORT_B]   namespaces PREFIX-a/-b,
#        interfaces PREFIXa0/PREFIXb0, addresses SUBNET.1/.2, devices uroce0
#        (with the `uroce link add` options in $UR_LINK_OPTS, if set)
#   ur_in PREFIX-a CMD...   run CMD in a namespace with the uroce environment
#   ur_pair_down PREFIX     remove everything ur_pair_up made
# UROCE must name the uroce binary. Safe under `set -e`.

ur_in() {
	local ns=$1
	shift
	ip netns exec "$ns" env UROCE="$UROCE" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _ "$@"
}

ur_pair_down() {
	local p=$1
	for side in a b; do
		if ip netns list 2>/dev/null | grep -qw "$p-$side"; then
			ip netns exec "$p-$side" "$UROCE" link del uroce0 2>/dev/null || true
			ip netns del "$p-$side" 2>/dev/null || true
		fi
	done
	ip link del "${p}a0" 2>/dev/null || true
	rm -f "/dev/shm/uroce-memif-$p.sock"
	return 0
}

ur_pair_up() {
	local p=$1 net=$2 mtu=$3 port_a=${4:-af_packet} port_b=${5:-af_packet}
	ur_pair_down "$p"
	ip netns add "$p-a" && ip netns add "$p-b" &&
		ip link add "${p}a0" type veth peer name "${p}b0" &&
		ip link set "${p}a0" netns "$p-a" && ip link set "${p}b0" netns "$p-b" &&
		ip -n "$p-a" addr add "$net.1/24" dev "${p}a0" &&
		ip -n "$p-b" addr add "$net.2/24" dev "${p}b0" &&
		ip -n "$p-a" link set "${p}a0" mtu "$mtu" up &&
		ip -n "$p-b" link set "${p}b0" mtu "$mtu" up &&
		ip -n "$p-a" link set lo up && ip -n "$p-b" link set lo up &&
		ip netns exec "$p-a" "$UROCE" link add uroce0 netdev "${p}a0" port "$port_a" ${UR_LINK_OPTS:-} &&
		ip netns exec "$p-b" "$UROCE" link add uroce0 netdev "${p}b0" port "$port_b" ${UR_LINK_OPTS:-}
}

# memif ports for a pair: a is the server, b the client, one socket in the filesystem
ur_memif_ports() {
	local p=$1
	echo "memif:role=server,id=0,socket=/dev/shm/uroce-memif-$p.sock memif:role=client,id=0,socket=/dev/shm/uroce-memif-$p.sock"
}

# ur_perftest_unreported LOG: a perftest finished but could not calibrate its
# cycle counter against the clock to report (r^2 < 0.9), which a busy
# machine can make it: "Can't produce a report", after every operation
# completed (an error completion would have ended the run first)
ur_perftest_unreported() { grep -q "Can't produce a report" "$1"; }
