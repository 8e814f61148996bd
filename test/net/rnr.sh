#!/bin/bash
# A receiver that runs out of posted receives (ib_send_bw -r 4 -t 64: a
# receive queue shallower than the send queue), in go-back-N and in selective
# repeat, between two namespaces over af_packet. Each run must finish, the
# sender must be held back by RNR NAKs (IBTA 9.7.5.2.8) without using up its
# transport retries, and selective repeat may not need many more RNR NAKs than
# go-back-N: it once NAKed every early packet with its own PSN and never
# finished (issue 26).
#   rnr.sh BUILD_DIR [ITERATIONS]
# (RNR_NS_PREFIX names the namespaces, default rn<pid>.)
# Exit 77 (skip) without root or namespaces.
set -u
iters=${2:-2000}
# shellcheck source=test/net/lib.sh
source "$(dirname "$0")/lib.sh" "$1"
ur_need perftest ib_send_bw

p=${RNR_NS_PREFIX:-rn$$}
p=${p:0:8}
net=10.64.$((RANDOM % 20)) # /24 of our own (multiprocess.sh takes 10.64.20 and up)
cleanup() { ur_pair_down "$p"; }
trap cleanup EXIT INT TERM
log=$(mktemp -d)
rnr_gbn=0
rnr_sr=0

for mode in gbn sr; do
	ur_pair_up "$p" "$net" 9000 || { echo "FAIL: setting up namespaces"; exit 1; }
	ur_pair_mode "$p" "$mode" || { echo "FAIL: uroce link add mode $mode"; exit 1; }
	bw=(ib_send_bw -d uroce0 -x 1 -s 65536 -r 4 -t 64 -n "$iters" -F)
	ur_in "$p-a" timeout 60 "${bw[@]}" >"$log/$mode.srv" 2>&1 &
	spid=$!
	ur_server_up "$p-a" $spid "${bw[@]}"
	t0=$EPOCHREALTIME
	ur_in "$p-b" timeout 60 "${bw[@]}" "$net.1" >"$log/$mode.cli" 2>&1
	rc_c=$?
	wait $spid
	rc_s=$?
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	rnr=$(ur_ctr "$p-b" rnr_nak_retry_err)  # received by the sender
	nak=$(ur_ctr "$p-a" out_of_buffer)      # sent by the receiver
	retry=$(ur_ctr "$p-b" retry_exceeded)
	rnr_exc=$(ur_ctr "$p-b" rnr_retry_exceeded)
	agreed=$(ur_ctr "$p-b" sr_negotiated)
	printf '%s: %s s, %s RNR NAKs received, %s sent, %s transport retries exhausted, %s QPs in SR\n' \
		"$mode" "$secs" "$rnr" "$nak" "$retry" "$agreed"
	eval "rnr_$mode=$rnr"
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || [ "$retry" -ne 0 ] || [ "$rnr_exc" -ne 0 ]; then
		echo "FAIL $mode (client $rc_c, server $rc_s)"
		sed 's/^/  client: /' "$log/$mode.cli" | tail -12
		sed 's/^/  server: /' "$log/$mode.srv" | tail -12
		fails=$((fails + 1))
	fi
	if [ "$mode" = sr ] && [ "$agreed" -eq 0 ]; then
		echo "FAIL no QP negotiated selective repeat"
		fails=$((fails + 1))
	fi
	ur_pair_down "$p"
done
# Timings on a shared host are noisy, and a faster receiver gets fewer RNR
# NAKs; the bound only catches NAKs by the packet, not by the message.
if [ "$rnr_sr" -gt $((10 * rnr_gbn + iters / 4)) ]; then
	echo "FAIL selective repeat took $rnr_sr RNR NAKs, go-back-N $rnr_gbn"
	fails=$((fails + 1))
fi
rm -rf "$log"
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
