# shellcheck shell=bash
# The start every namespace test shares. Source it with the build directory:
#   source "$(dirname "$0")/lib.sh" "$1"
# It sets $build and exports UROCE, sources tools/netns.sh, exits 77 (skip)
# without root or network namespaces, and gives ur_need, ur_test_pair,
# ur_ctr, ur_pair_mode, ok, bad and $fails.
build=${1:?usage: $(basename "$0") BUILD_DIR}
export UROCE=$build/tools/uroce
# shellcheck source=tools/netns.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../tools/netns.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }

# ur_need PACKAGE PROGRAM...: skip the test unless every PROGRAM is installed.
ur_need() {
	local pkg=$1 b
	shift
	for b in "$@"; do
		command -v "$b" >/dev/null || { echo "SKIP: no $b ($pkg)"; exit 77; }
	done
}

# ur_test_pair PREFIX [memif|af_xdp|tap]: namespaces PREFIX<pid>-a/-b on a
# random 10.61.X.0/24 with a uroce device each ($p, $net), a random $port,
# a $log directory, all removed on exit; $ctl is the server's address for
# perftest's TCP handshake. The port:
#  - af_packet (the default) on a veth pair at MTU 9000;
#  - memif: the devices joined by memif (the veths carry the TCP);
#  - af_xdp: on the veths at MTU 3000: XDP on a veth refuses a peer MTU
#    above about 3.5 KB, and an AF_XDP frame holds 3456 bytes (path MTU
#    2048, dataplane/port.c);
#  - tap: a tap interface in each namespace, its kernel side wired to a
#    veth between the namespaces by tc redirects (a tap's kernel side is
#    its wire), at MTU 1500: DPDK 22.11's tap PMD sends no longer frame.
# AF_XDP and tap take every frame of the interface from the kernel, so
# perftest's TCP goes over a second veth pair ($ctl on 10.62.X.0/24).
ur_test_pair() {
	local pa=af_packet pb=af_packet mtu=9000 kind=${2:-af_packet}
	p=$1$$
	p=${p:0:8}
	[ "$kind" = memif ] && read -r pa pb <<<"$(ur_memif_ports "$p")"
	[ "$kind" = af_xdp ] && pa=af_xdp pb=af_xdp mtu=3000
	[ "$kind" = tap ] && mtu=1500
	net=10.61.$((RANDOM % 200 + 20))
	ctl=$net.1
	# shellcheck disable=SC2034 # used by the test that sources this
	port=$((20000 + RANDOM % 20000))
	log=$(mktemp -d)
	# shellcheck disable=SC2317 # invoked by the trap
	cleanup() { ur_pair_down "$p"; rm -rf "$log"; }
	trap cleanup EXIT INT TERM
	if [ "$kind" = tap ]; then
		ur_tap_pair_up "$p" "$net" "$mtu"
	else
		ur_pair_up "$p" "$net" "$mtu" "$pa" "$pb"
	fi || { echo "FAIL: setting up namespaces"; exit 1; }
	if [ "$kind" = af_xdp ] || [ "$kind" = tap ]; then
		ctl=10.62.${net##*.}.1
		ip link add "${p}ca" type veth peer name "${p}cb" &&
			ip link set "${p}ca" netns "$p-a" && ip link set "${p}cb" netns "$p-b" &&
			ip -n "$p-a" addr add "$ctl/24" dev "${p}ca" &&
			ip -n "$p-b" addr add "10.62.${net##*.}.2/24" dev "${p}cb" &&
			ip -n "$p-a" link set "${p}ca" up && ip -n "$p-b" link set "${p}cb" up ||
			{ echo "FAIL: setting up the control link"; exit 1; }
	fi
}

# ur_tap_pair_up PREFIX SUBNET MTU: namespaces PREFIX-a/-b, a multi-queue
# tap PREFIXa0/PREFIXb0 in each with SUBNET.1/.2 and a uroce device on it
# (port tap); what the kernel sends out of a tap goes into the veth
# PREFIXa1-PREFIXb1 and the other way round (tc redirects), a cable
# between the two taps. What the kernel sends a tap waits in the tap's
# queue until the daemon reads it: that queue is the port's receive ring,
# 10000 frames here (the default 1000 overflowed while 8 pairs ran).
ur_tap_pair_up() {
	local p=$1 net=$2 mtu=$3 side i=1
	ur_pair_down "$p"
	ip netns add "$p-a" && ip netns add "$p-b" &&
		ip link add "${p}a1" type veth peer name "${p}b1" &&
		ip link set "${p}a1" netns "$p-a" && ip link set "${p}b1" netns "$p-b" || return 1
	for side in a b; do
		local ns=$p-$side t=${p}${side}0 v=${p}${side}1
		ip -n "$ns" link set lo up &&
			ip -n "$ns" tuntap add mode tap multi_queue name "$t" &&
			ip -n "$ns" addr add "$net.$i/24" dev "$t" &&
			ip -n "$ns" link set "$t" mtu "$mtu" txqueuelen 10000 up &&
			ip -n "$ns" link set "$v" mtu "$mtu" up &&
			tc -n "$ns" qdisc add dev "$t" ingress &&
			tc -n "$ns" qdisc add dev "$v" ingress &&
			tc -n "$ns" filter add dev "$t" ingress u32 match u32 0 0 \
				action mirred egress redirect dev "$v" &&
			tc -n "$ns" filter add dev "$v" ingress u32 match u32 0 0 \
				action mirred egress redirect dev "$t" &&
			ip netns exec "$ns" "$UROCE" link add uroce0 netdev "$t" port tap ${UR_LINK_OPTS:-} ||
			return 1
		i=2
	done
}

# ur_ctr NAMESPACE COUNTER: its total on uroce0 there (0 if it has none)
ur_ctr() {
	local v
	v=$(ip netns exec "$1" "$UROCE" stat uroce0 -a | awk -v c="$2" '$1 == c { print $2 }')
	echo "${v:-0}"
}

# ur_pair_mode PREFIX MODE: the pair's devices made again over af_packet in
# retransmission mode MODE (gbn or sr), as `uroce link add ... mode` sets it
ur_pair_mode() {
	local side
	for side in a b; do
		ip netns exec "$1-$side" "$UROCE" link del uroce0 &&
			ip netns exec "$1-$side" "$UROCE" link add uroce0 netdev "${1}${side}0" \
				port af_packet mode "$2" || return 1
	done
}

# ur_nobody_reaches PATH dgram|seqpacket: can an unprivileged user (uid
# 65534) send to (dgram) or connect to (seqpacket) the unix socket PATH?
# 0 yes, 1 no (EACCES), anything else: it could not be tried. The device's
# sockets must say no, as its files do.
ur_nobody_reaches() {
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
dgram = sys.argv[2] == "dgram"
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM if dgram else socket.SOCK_SEQPACKET)
try:
    s.sendto(b"x", sys.argv[1]) if dgram else s.connect(sys.argv[1])
except PermissionError:
    sys.exit(1)
except OSError as e:
    print(sys.argv[1], e, file=sys.stderr)
    sys.exit(2)
' "$1" "$2"
}

# ur_bw_pair_end CLIENT_PID SERVER_PID CLIENT_LOG: how a perftest bandwidth
# pair ended, in $ur_bw_end: "finished" (both exit 0, a result line), "failed",
# or one of perftest's refusals when it cannot calibrate its cycle counter
# against the clock (r^2 < 0.9), which many programs on 2 CPUs can make
# it: "unreported" ("Can't produce a report", after every write completed:
# a completion error would have ended the run first) and "unrun" (the rate
# limiter's refusal, before anything was posted). Not in $(): wait needs
# this shell's children.
# shellcheck disable=SC2034 # read by the test that sources this
ur_bw_pair_end() {
	local rc_c=0 rc_s=0
	wait "$1" || rc_c=$?
	wait "$2" || rc_s=$?
	if [ $rc_c = 0 ] && [ $rc_s = 0 ] && grep -Eq '^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$3"; then
		ur_bw_end=finished
	elif [ $rc_s = 0 ] && ur_perftest_unreported "$3"; then
		ur_bw_end=unreported
	elif grep -q "couldn't acquire cpu frequency for rate limiter" "$3"; then
		ur_bw_end=unrun
	else
		ur_bw_end=failed
	fi
}

fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
