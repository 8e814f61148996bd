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

# ur_test_pair PREFIX [memif]: namespaces PREFIX<pid>-a/-b on a random
# 10.61.X.0/24 at MTU 9000 with a uroce device each ($p, $net), over
# af_packet or joined by memif, a random $port, a $log directory, all
# removed on exit.
ur_test_pair() {
	local pa=af_packet pb=af_packet
	p=$1$$
	p=${p:0:8}
	[ "${2:-}" = memif ] && read -r pa pb <<<"$(ur_memif_ports "$p")"
	net=10.61.$((RANDOM % 200 + 20))
	# shellcheck disable=SC2034 # used by the test that sources this
	port=$((20000 + RANDOM % 20000))
	log=$(mktemp -d)
	# shellcheck disable=SC2317 # invoked by the trap
	cleanup() { ur_pair_down "$p"; rm -rf "$log"; }
	trap cleanup EXIT INT TERM
	ur_pair_up "$p" "$net" 9000 "$pa" "$pb" || { echo "FAIL: setting up namespaces"; exit 1; }
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

# ur_listening NAMESPACE PORT: wait (up to 20 s) until a server there
# listens on TCP port PORT (ucx_perftest's and fi_pingpong's out-of-band
# socket). A fixed second was too short at a load average of 60: the
# client's connect() was refused and the run failed for nothing of uroce's.
ur_listening() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2")" ] && return 0
		sleep 0.1
	done
	return 1
}

fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
