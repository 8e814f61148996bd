# Two network namespaces joined by a veth pair, with a uroce device in each:
# the default playground of the demo, the tests and the benchmarks.
# Source this file, then:
#   ur_pair_up PREFIX SUBNET MTU [PORT_A PORT_B]   namespaces PREFIX-a/-b,
#        interfaces PREFIXa0/PREFIXb0, addresses SUBNET.1/.2, devices uroce0
#        (with the `uroce link add` options in $UR_LINK_OPTS, if set)
#   ur_in PREFIX-a CMD...   run CMD in a namespace with the uroce environment
#   ur_pair_down PREFIX     remove everything ur_pair_up made
#   ur_server_up NS PID CMD...  wait until the server CMD listens (below)
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

# ur_listens NAMESPACE PORT: does a program there listen on TCP port PORT?
ur_listens() { [ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2")" ]; }

# ur_cm_listens NAMESPACE PORT: does a program there rdma_listen on PORT of
# a uroce device (the name its CM binds, provider/rdmacm_route.c)?
ur_cm_listens() { ip netns exec "$1" ss -Hxl | grep -q "/cm-port-[0-9]*-$2 "; }

# ur_listening NAMESPACE PORT: wait (up to 20 s) until a server there
# listens on TCP port PORT (ucx_perftest's and fi_pingpong's out-of-band
# socket). A fixed second was too short at a load average of 60: the
# client's connect() was refused and the run failed for nothing of uroce's.
ur_listening() {
	local i
	for ((i = 0; i < 200; i++)); do
		ur_listens "$1" "$2" && return 0
		sleep 0.1
	done
	return 1
}

# ur_server_up NAMESPACE PID CMD...: wait (up to 20 s) until the server
# started there as CMD (PID: its background job) listens on its port, by
# TCP or rdma_cm (-p N, --port N, --port=N, or fabtests' -B N; 18515,
# perftest's and ibverbs-utils' own, if none); fails at once if the server
# has exited. A fixed pause before the client cost 1.5 s a pair and was
# still too short on a very loaded host.
ur_server_up() {
	local ns=$1 pid=$2 port=18515 prev= a i
	shift 2
	for a in "$@"; do
		case $prev in -p | --port | -B) port=$a ;; esac
		case $a in --port=*) port=${a#--port=} ;; esac
		prev=$a
	done
	for ((i = 0; i < 400; i++)); do
		{ ur_listens "$ns" "$port" || ur_cm_listens "$ns" "$port"; } && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
