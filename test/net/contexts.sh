#!/bin/bash
# Contexts of one device share it, as on a NIC (issue 25, stage 1): the
# contexts program opens 64 contexts of uroce0 in one process and connects
# them pairwise through the device's own GID (RC SEND, WRITE with immediate,
# READ, atomics; UC SEND and WRITE with immediate into SRQs, WRITE; UD;
# event mode; a context closed with its objects), every
# byte checked; the device counts no drop, loss or timeout for it. The same
# over memif, and at MTU 1500 (more, smaller frames through the loop).
# And a process that opens and closes contexts untidily (their PDs, CQs,
# AHs, MRs, SRQs and QPs left) 24 times under limits of 8 (SRQs 4): each close gives
# back what its context counted against the device's limits.
#   contexts.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
source "$(dirname "$0")/lib.sh" "$1"
prog=$build/test/contexts

# stat NS NAME: one counter of uroce0 in NS ("unknown" if it has no such counter)
stat() {
	ip netns exec "$1" "$UROCE" stat uroce0 -a | awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "unknown" }'
}

# run LABEL NS ARGS...: the program passes, and the device counted no trouble
run() {
	local label=$1 ns=$2 c bad_ctr=""
	shift 2
	if ur_in "$ns" "$prog" "$@" >"$log/out" 2>&1; then
		for c in rx_drop_unknown_qp dp_tx_loopback_drops local_ack_timeout_err retry_exceeded \
			rnr_nak_retry_err out_of_sequence packet_seq_err rx_icrc_errors retransmitted_packets rx_drop_no_buffer \
			dp_tx_no_mbuf; do
			[ "$(stat "$ns" "$c")" = 0 ] || bad_ctr="$bad_ctr $c=$(stat "$ns" "$c")"
		done
		loops=$(stat "$ns" dp_tx_loopback)
		if [ -n "$bad_ctr" ]; then
			bad "$label: counters$bad_ctr"
		elif [ "$loops" -lt 2000 ]; then
			bad "$label: only $loops frames through the loopback"
		else
			ok "$label: $(grep -c ': ok' "$log/out") checks, $loops frames looped back, no drop"
		fi
	else
		bad "$label: exit $?"
	fi
	sed 's/^/    /' "$log/out"
}

ur_test_pair cx
lim=pd=8,cq=8,ah=8,mr=8,qp=8,srq=4
if ur_in "$p-a" env UROCE_LIMITS=$lim "$prog" -u 24 >"$log/out" 2>&1; then
	ok "24 contexts closed untidily under UROCE_LIMITS=$lim"
else
	bad "24 contexts closed untidily under UROCE_LIMITS=$lim: exit $?"
fi
sed 's/^/    /' "$log/out"
run "64 contexts, af_packet, MTU 9000" "$p-a" -n 64
ur_pair_down "$p"

read -r pa pb <<<"$(ur_memif_ports "$p")"
ur_pair_up "$p" "$net" 1500 "$pa" "$pb" || { echo "FAIL: setting up memif namespaces"; exit 1; }
run "8 contexts, memif, MTU 1500" "$p-a" -n 8
exit $((fails > 0))
