#!/bin/bash
# perftest's READ and atomic tests with their defaults between a device that
# offers 128 outstanding READs/atomics, as Soft-RoCE does, and one that
# offers 16, as mlx5 does (uroce's default), each side as server and client.
# perftest gives each QP max_dest_rd_atomic = its own device's max_qp_rd_atom
# and max_rd_atomic = the peer's; this used to fail with "Failed to modify QP
# to RTS" on the side offering 16. Checked besides: the QPs run with the
# initiator depth their device advertises (the debug log's RTS line), no
# responder was asked past its resources (no invalid-request NAK, no error
# completion), and both sides really answered READs and atomics.
#   rd_atomic.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
build=${1:?usage: rd_atomic.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export UROCE=$build/tools/uroce
# shellcheck source=../../tools/netns.sh
source "$here/../../tools/netns.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }
command -v ib_read_bw >/dev/null || { echo "FAIL: perftest is not installed"; exit 1; }

# our own names (hr*, 10.63.7.0/24): nothing else's namespaces are touched
p=hr$(($$ % 100000))
net=10.63.7
log=$(mktemp -d /tmp/uroce-rdatom.XXXXXX)
fails=0
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	ur_pair_down "$p"
	[ "${KEEP_LOG:-0}" = 1 ] && echo "logs in $log" || rm -rf "$log"
}
trap cleanup EXIT INT TERM
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

ur_pair_up "$p" "$net" 9000 || { echo "FAIL: setting up namespaces"; exit 1; }
# a offers what Soft-RoCE offers; b keeps the default
ip netns exec "$p-a" "$UROCE" link del uroce0 &&
	ip netns exec "$p-a" "$UROCE" link add uroce0 netdev "${p}a0" rd_atom 128 ||
	{ echo "FAIL: uroce link add ... rd_atom 128"; exit 1; }
for side in a:128 b:16; do
	ip netns exec "$p-${side%%:*}" "$UROCE" link show uroce0 | grep -q "rd_atom ${side#*:}\$" ||
		fail "uroce link show in $p-${side%%:*} does not say rd_atom ${side#*:}"
done
if ip netns exec "$p-a" "$UROCE" link add uroce1 netdev "${p}a0" rd_atom 129 2>/dev/null; then
	fail "rd_atom 129 accepted"
	ip netns exec "$p-a" "$UROCE" link del uroce1
fi

for side in a:128 b:16; do
	ns=$p-${side%%:*}
	want=${side#*:}
	ur_in "$ns" ibv_devinfo -v >"$log/devinfo" 2>&1
	got_rd=$(awk '$1 == "max_qp_rd_atom:" { print $2 }' "$log/devinfo")
	got_init=$(awk '$1 == "max_qp_init_rd_atom:" { print $2 }' "$log/devinfo")
	if [ "$got_rd" = "$want" ] && [ "$got_init" = "$want" ]; then
		echo "ok   $ns offers max_qp_rd_atom $got_rd, max_qp_init_rd_atom $got_init"
	else
		fail "$ns offers max_qp_rd_atom '$got_rd', max_qp_init_rd_atom '$got_init', want $want"
	fi
done

counter() { # NS NAME: a device counter of uroce0
	ip netns exec "$1" "$UROCE" stat uroce0 | awk -v n="$2" '$1 == n { print $2 }'
}

bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
# run NAME SERVER_SIDE CLIENT_SIDE CMD: CMD in both, the client toward the server
run() {
	local name=$1 s=$2 c=$3 cmd=$4 srv_ip rc_s rc_c
	[ "$s" = a ] && srv_ip=$net.1 || srv_ip=$net.2
	ur_in "$p-$s" env UROCE_DEBUG=1 UROCE_DEBUG_FILE="$log/$name.srv.dbg" \
		timeout 60 stdbuf -oL $cmd >"$log/$name.srv" 2>&1 &
	local spid=$!
	ur_server_up "$p-$s" $spid $cmd
	ur_in "$p-$c" env UROCE_DEBUG=1 UROCE_DEBUG_FILE="$log/$name.cli.dbg" \
		timeout 60 stdbuf -oL $cmd "$srv_ip" >"$log/$name.cli" 2>&1
	rc_c=$?
	wait $spid
	rc_s=$?
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || ! grep -Eq "$bw_re" "$log/$name.cli"; then
		fail "$name (client $rc_c, server $rc_s)"
		sed 's/^/  client: /' "$log/$name.cli" | tail -12
		sed 's/^/  server: /' "$log/$name.srv" | tail -12
		return
	fi
	echo "ok   $name: $(grep -E "$bw_re" "$log/$name.cli" | tail -1 | tr -s ' \t' ' ')"
	# the client's QP keeps at most what its own device advertises
	# outstanding, whatever the peer offered; each QP holds the responder
	# resources its device advertises
	for role in srv:$s cli:$c; do
		local r=${role%%:*} d=${role#*:} depth=16 peer=128 line
		[ "$d" = a ] && { depth=128; peer=16; }
		# (not QP 1's: the device's housekeeper runs a CM, docs/rdma-cm.md)
		line=$(grep -v ' qp 0x1: ' "$log/$name.$r.dbg" | grep -m1 -- '-> RTS .*max_rd_atomic')
		# a perftest bandwidth server only receives: its QP stops at RTR
		if [ "$r" = cli ] && ! grep -q -- "max_rd_atomic $((depth < peer ? depth : peer))\$" <<<"$line"; then
			fail "$name $r ($d): RTS with '${line##*rnr_retry}', want max_rd_atomic $((depth < peer ? depth : peer))"
		fi
		line=$(grep -v ' qp 0x1: ' "$log/$name.$r.dbg" | grep -m1 -- '-> RTR .*max_dest_rd_atomic')
		if ! grep -q -- "max_dest_rd_atomic $depth " <<<"$line"; then
			fail "$name $r ($d): RTR with '$line', want max_dest_rd_atomic $depth"
		fi
	done
}

run read_a_server a b "ib_read_bw -d uroce0 -x 1 -n 2000"
run read_b_server b a "ib_read_bw -d uroce0 -x 1 -n 2000"
run atomic_a_server a b "ib_atomic_bw -d uroce0 -x 1 -n 2000"
run atomic_b_server b a "ib_atomic_bw -d uroce0 -x 1 -n 2000"

for ns in "$p-a" "$p-b"; do
	bad=0
	for n in req_remote_invalid_request req_cqe_error resp_cqe_error; do
		v=$(counter "$ns" "$n")
		[ "${v:-0}" -eq 0 ] || { fail "$ns: $n $v"; bad=1; }
	done
	reads=$(counter "$ns" rx_read_requests)
	atomics=$(counter "$ns" rx_atomic_requests)
	if [ "${reads:-0}" -lt 2000 ] || [ "${atomics:-0}" -lt 2000 ]; then
		fail "$ns answered ${reads:-0} READs and ${atomics:-0} atomics, want 2000 each at least"
	elif [ $bad -eq 0 ]; then
		echo "ok   $ns answered $reads READs and $atomics atomics, no invalid request, no error"
	fi
done

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
