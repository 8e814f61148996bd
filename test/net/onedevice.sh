#!/bin/bash
# One device shared by the programs of a host (issue 25): the stock
# ibverbs-utils and perftest (RC, UC and UD; SENDs, WRITEs, READs, atomics,
# SRQ, events) with server and client in one namespace on one uroce device
# over af_packet; the frames between them go from process to process
# (dataplane/peer_loop.c), never to the wire (on memif, AF_XDP and tap ports
# the same, the device's daemon holding the port: test sharedport). Then four
# ib_write_bw pairs at once on the device and one of them killed mid-transfer:
# the other three finish. The device counts no loopback drop. A mixed soak
# (every opcode, every byte checked) between two processes of the device.
#   onedevice.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
source "$(dirname "$0")/lib.sh" "$1"
ur_need perftest ib_write_bw
ur_need ibverbs-utils ibv_rc_pingpong

# stat NAME: one counter of uroce0 in $p-a ("unknown" if there is no such counter)
stat() {
	ip netns exec "$p-a" "$UROCE" stat uroce0 -a | awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print "unknown" }'
}

# check NAME RESULT_RE SERVER_CMD CLIENT_CMD: both in $p-a, the client given
# the device's own address last; both exit 0 and the client prints RE.
check() {
	local name=$1 re=$2 srv=$3 cli=$4 t0=$SECONDS rc_c rc_s spid
	ur_in "$p-a" timeout 60 $srv >"$log/$name.srv" 2>&1 &
	spid=$!
	ur_server_up "$p-a" $spid $srv
	ur_in "$p-a" timeout 60 $cli "$net.1" >"$log/$name.cli" 2>&1
	rc_c=$?
	wait $spid
	rc_s=$?
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || ! grep -Eq "$re" "$log/$name.cli"; then
		bad "$name (client $rc_c, server $rc_s, $((SECONDS - t0)) s)"
		sed 's/^/  client: /' "$log/$name.cli" | tail -8
		sed 's/^/  server: /' "$log/$name.srv" | tail -8
	else
		ok "$name ($((SECONDS - t0)) s): $(grep -E "$re" "$log/$name.cli" | tail -1 | tr -s ' \t' ' ')"
	fi
}

bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
pp_re='iters in'

# the stock programs, server and client on one device
programs() {
	check ib_write_bw "$bw_re" "ib_write_bw -d uroce0 -x 1 -D 2 -p $port" \
		"ib_write_bw -d uroce0 -x 1 -D 2 -p $port"
	check ib_read_bw "$bw_re" "ib_read_bw -d uroce0 -x 1 -D 2 -p $port" \
		"ib_read_bw -d uroce0 -x 1 -D 2 -p $port"
	check ib_send_bw "$bw_re" "ib_send_bw -d uroce0 -x 1 -D 2 -p $port" \
		"ib_send_bw -d uroce0 -x 1 -D 2 -p $port"
	check ib_send_bw_ud "$bw_re" "ib_send_bw -d uroce0 -x 1 -c UD -p $port" \
		"ib_send_bw -d uroce0 -x 1 -c UD -p $port"
	# UC has no window: its sender outruns the receiving process unless
	# held back (tx_held_for_receiver), and counted() finds no drop
	check ib_send_bw_uc "$bw_re" "ib_send_bw -d uroce0 -x 1 -c UC -D 2 -p $port" \
		"ib_send_bw -d uroce0 -x 1 -c UC -D 2 -p $port"
	check ib_write_bw_uc "$bw_re" "ib_write_bw -d uroce0 -x 1 -c UC -D 2 -p $port" \
		"ib_write_bw -d uroce0 -x 1 -c UC -D 2 -p $port"
	check ib_atomic_bw "$bw_re" "ib_atomic_bw -d uroce0 -x 1 -D 2 -p $port" \
		"ib_atomic_bw -d uroce0 -x 1 -D 2 -p $port"
	check ibv_rc_pingpong "$pp_re" "ibv_rc_pingpong -d uroce0 -g 1 -p $port" \
		"ibv_rc_pingpong -d uroce0 -g 1 -p $port"
	check ibv_ud_pingpong "$pp_re" "ibv_ud_pingpong -d uroce0 -g 1 -s 2048 -p $port" \
		"ibv_ud_pingpong -d uroce0 -g 1 -s 2048 -p $port"
	check ibv_srq_pingpong "$pp_re" "ibv_srq_pingpong -d uroce0 -g 1 -p $port" \
		"ibv_srq_pingpong -d uroce0 -g 1 -p $port"
	check ibv_uc_pingpong "$pp_re" "ibv_uc_pingpong -d uroce0 -g 1 -p $port" \
		"ibv_uc_pingpong -d uroce0 -g 1 -p $port"
	check ibv_rc_pingpong_events "$pp_re" "ibv_rc_pingpong -d uroce0 -g 1 -e -p $port" \
		"ibv_rc_pingpong -d uroce0 -g 1 -e -p $port"
}

# nothing was dropped between the processes, and frames did cross
counted() {
	local drops loops
	drops=$(stat dp_tx_loopback_drops)
	loops=$(stat dp_tx_loopback)
	if [ "$drops" = 0 ] && [ "$loops" != unknown ] && [ "$loops" -gt 100000 ]; then
		ok "$1: $loops frames from process to process, none dropped ($(stat dp_tx_loopback_no_owner) to processes gone, $(stat tx_held_for_receiver) senders paused for a receiver behind)"
	else
		bad "$1: dp_tx_loopback $loops, dp_tx_loopback_drops $drops"
	fi
}

ur_test_pair od
# what a fresh process's first ibv_open_device takes, printed, not judged
# (a benchmark's business); with DPDK's start it was 124-162 ms here
opens=$(for _ in 1 2 3 4 5; do ur_in "$p-a" "$build/test/openctx" 1 | sed -n 's/.*first_open_ms=//p'; done | sort -n | tr '\n' ' ')
echo "note first ibv_open_device of 5 fresh processes: $opens ms"
echo "== af_packet"
programs
counted af_packet

# every opcode mixed, sizes to 64 KiB, every byte checked, through the
# shared rings between the two processes (their wrap, full rings, atomics)
echo "== soak between two processes of the device, 15 s"
ur_in "$p-a" timeout 60 "$build/test/soak" --server --port $((port + 30)) >"$log/soak.srv" 2>&1 &
sspid=$!
ur_server_up "$p-a" $sspid --port $((port + 30))
if ur_in "$p-a" timeout 60 "$build/test/soak" --client "$net.1" --port $((port + 30)) --qps 16 \
	--seconds 15 --report 15 >"$log/soak.cli" 2>&1 && grep -q "PASS" "$log/soak.cli"; then
	ok "soak: $(grep -E "^soak client: +15 s" "$log/soak.cli" | tail -1 | cut -d';' -f1 | tr -s ' ')"
else
	bad "soak between two processes of the device"
	tail -5 "$log/soak.cli"
fi
kill "$sspid" 2>/dev/null
wait "$sspid" 2>/dev/null

# four pairs at once; one client killed mid-transfer, the rest finish
echo "== 4 ib_write_bw pairs on one device, one killed"
for i in 0 1 2 3; do
	ur_in "$p-a" timeout 60 ib_write_bw -d uroce0 -x 1 -D 4 -p $((port + 10 + i)) \
		>"$log/multi$i.srv" 2>&1 &
	spids[i]=$!
done
for i in 0 1 2 3; do
	ur_server_up "$p-a" "${spids[i]}" -p $((port + 10 + i))
done
for i in 0 1 2 3; do
	ur_in "$p-a" timeout 60 ib_write_bw -d uroce0 -x 1 -D 4 -p $((port + 10 + i)) "$net.1" \
		>"$log/multi$i.cli" 2>&1 &
	cpids[i]=$!
done
sleep 3
# the client's perftest, not the timeout wrapper
pkill -KILL -f "ib_write_bw -d uroce0 -x 1 -D 4 -p $((port + 10)) $net.1"
alive=0
for i in 1 2 3; do
	ur_bw_pair_end "${cpids[i]}" "${spids[i]}" "$log/multi$i.cli"
	if [ $ur_bw_end = finished ] || [ $ur_bw_end = unreported ]; then
		alive=$((alive + 1))
		[ $ur_bw_end = finished ] || echo "note pair $i finished, but perftest could not calibrate its clock to report"
	else
		sed 's/^/  client: /' "$log/multi$i.cli" | tail -5
	fi
done
wait "${cpids[0]}" "${spids[0]}" 2>/dev/null
if [ $alive = 3 ]; then
	ok "one client killed, the other three pairs finished"
else
	bad "one client killed: only $alive of the other 3 pairs finished"
fi

# the hw_counters files after the last programs on the device were killed
# mid-transfer, read before `uroce stat` (which rewrites them itself): the
# device's keeper (uroce-keeper) keeps them current; without it they kept
# the last half second's values
ur_in "$p-a" timeout 60 ib_write_bw -d uroce0 -x 1 -D 10 -p $((port + 20)) >"$log/kill.srv" 2>&1 &
ur_server_up "$p-a" $! -p $((port + 20))
ur_in "$p-a" timeout 60 ib_write_bw -d uroce0 -x 1 -D 10 -p $((port + 20)) "$net.1" >"$log/kill.cli" 2>&1 &
sleep 3
# each program's loopback listeners are files only the device's users reach
loops=$(ip netns exec "$p-a" ss -Hxl | grep -o "/[^ ]*/loop-[0-9]*")
reached= untried=
for f in $loops; do
	ur_nobody_reaches "$f" seqpacket
	case $? in
	0) reached="$reached $f" ;;
	1) ;;
	*) untried="$untried $f" ;;
	esac
done
if [ -n "$loops" ] && [ -z "$reached$untried" ]; then
	ok "$(echo "$loops" | wc -l) loopback sockets, none reached by an unprivileged user"
else
	bad "loopback sockets: '${loops//$'\n'/ }'; reached by an unprivileged user:${reached:- none}; could not try:${untried:- none}"
fi
# a program on an af_packet port starts no DPDK (dataplane/frames.h): none
# of EAL's memory (its memfd "nohuge", or hugepage files "rtemap") is mapped
eal=0
pss=
for pid in $(pgrep -f "^ib_write_bw -d uroce0 -x 1 -D 10 -p $((port + 20))"); do
	grep -qE 'nohuge|rtemap' "/proc/$pid/maps" && eal=$((eal + 1))
	pss="$pss $(awk '$1 == "Pss:" { printf "%.1f", $2 / 1024 }' "/proc/$pid/smaps_rollup") MiB"
done
if [ -n "$pss" ] && [ $eal = 0 ]; then
	ok "no DPDK memory in the server and client (Pss$pss)"
else
	bad "$eal of the programs mapped DPDK's memory (Pss$pss)"
fi
pkill -KILL -f "ib_write_bw -d uroce0 -x 1 -D 10 -p $((port + 20))"
wait 2>/dev/null
sleep 1.5
hw=$(ip netns exec "$p-a" bash -c 'eval "$("$0" env)"; cat "$SYSFS_PATH/class/infiniband/uroce0/ports/1/hw_counters/tx_packets"' "$UROCE")
st=$(stat tx_packets)
if [ -n "$hw" ] && [ "$hw" = "$st" ]; then
	ok "hw_counters tx_packets $hw = uroce stat's after the kill"
else
	bad "hw_counters tx_packets '$hw', uroce stat $st after the kill"
fi
exit $((fails > 0))
