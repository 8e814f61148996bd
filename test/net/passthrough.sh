#!/bin/bash
# Pass-through (docs/shared-device.md 4.6): two namespaces whose devices are
# joined by memif, each with its daemon (uroce link add's default), the
# stock programs on them:
#  - a lone pair runs on the lent wire itself: both programs borrowed it
#    (dp_wire_borrowed), and the switches moved none of its frames;
#  - rping (rdma_cm) while the wire is lent: the connection's MADs are for
#    QP 1, the housekeeper's, and go through the daemons both ways;
#  - a second pair joins mid-transfer: the daemons ask for the wire back,
#    both transfers complete, and the first pair gets it again alone;
#  - the borrower killed mid-transfer: the daemon takes the wire back, and
#    the next pair borrows and runs;
#  - the switch killed under a borrower: restarted, it lends the wire again
#    and the transfer completes;
#  - a borrower stopped (SIGSTOP, as in a debugger) does not hold the wire:
#    1 s after the daemon asked for it back it takes it, a second pair runs
#    meanwhile, and the first completes once continued; stopped while a
#    program came and went, it is lent the wire again, and continued it
#    drops the loan taken from it and takes the new one;
#  - `pass_through off`: nobody borrows, frames go through the switch.
# Frames the daemons switch are counted (dp_switch_frames): a lone pair's
# go past them, and no relayed frame is dropped (dp_relay_dropped).
#   passthrough.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
source "$(dirname "$0")/lib.sh" "$1"
ur_need perftest ib_write_bw ib_send_bw
ur_need rdmacm-utils rping

ur_test_pair pt memif
bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
in_a=(ip netns exec "$p-a" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _)
in_b=(ip netns exec "$p-b" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _)
daemon_log() { ip netns exec "$p-$1" "$UROCE" link show uroce0 | awk '/daemon uroced pid/ { print $6 }'; }
log_a=$(daemon_log a)
log_b=$(daemon_log b)

# child_of PID NAME: the program NAME that `timeout` (PID) runs, which the
# daemon knows by its pid (not `uroce env`, run first under the same pid)
child_of() {
	local i c
	for ((i = 0; i < 100; i++)); do
		c=$(pgrep -P "$1" -x "$2" | head -1)
		[ -n "$c" ] && { echo "$c"; return; }
		sleep 0.05
	done
	echo "$1"
}
# bw_pair NAME PORT CMD ARGS...: a server on a, its client on b, in the
# background; $srv and $cli their pids (timeout's), $prog the client program's
bw_pair() {
	local name=$1 prt=$2
	shift 2
	"${in_a[@]}" timeout 60 "$@" -d uroce0 -x 1 -p "$prt" >"$log/$name.srv" 2>&1 &
	srv=$!
	ur_server_up "$p-a" $srv -p "$prt"
	"${in_b[@]}" timeout 60 "$@" -d uroce0 -x 1 -p "$prt" "$net.1" >"$log/$name.cli" 2>&1 &
	cli=$!
	prog=$(child_of $cli "$1")
}
# completed NAME: both ends exited 0 and the client reported a bandwidth
completed() {
	wait "$cli" && wait "$srv" && grep -E "$bw_re" "$log/$1.cli" | awk '$4 > 0 { f = 1 } END { exit !f }'
}
result() { grep -E "$bw_re" "$log/$1.cli" | tr -s ' \t' ' '; }
# lent_lines SIDE PID: how often that side's daemon lent the wire to PID
lent_lines() { grep -c "the wire is lent to program $2," "$(daemon_log "$1")"; }

echo "== a lone pair on the lent wire"
b0=$(ur_ctr "$p-a" dp_wire_borrowed)
s0=$(ur_ctr "$p-b" dp_switch_frames)
bw_pair lone "$port" ib_write_bw -s 65536 -D 3
if completed lone; then
	borrowed=$(($(ur_ctr "$p-a" dp_wire_borrowed) - b0))
	iters=$(grep -E "$bw_re" "$log/lone.cli" | awk '{ print $2 }')
	# the switch moved the keeper's few frames (ARP, the counters' QP 1), not the pair's
	switched=$(($(ur_ctr "$p-b" dp_switch_frames) - s0))
	if [ "$borrowed" -ge 1 ] && [ "$(lent_lines b "$prog")" -ge 1 ] && [ "$switched" -lt 100 ]; then
		ok "lone pair on the lent wire: $(result lone); b's switch moved $switched frames"
	else
		bad "lone pair not on the lent wire: borrowed $borrowed, b's switch moved $switched frames for $iters messages"
		grep "pass-through" "$log_b" | tail -5
	fi
else
	bad "lone pair: $(tail -n 3 "$log/lone.cli")"
fi

echo "== rping while the wire is lent"
r0=$(ur_ctr "$p-b" dp_relayed_to_daemon)
w0=$(ur_ctr "$p-b" dp_relayed_to_wire)
"${in_a[@]}" timeout 30 rping -s -a "$net.1" -p "$port" -C 20 -v >"$log/rping.srv" 2>&1 &
rs=$!
ur_server_up "$p-a" $rs -p "$port"
"${in_b[@]}" timeout 30 rping -c -a "$net.1" -p "$port" -C 20 -v >"$log/rping.cli" 2>&1
rc=$?
wait $rs
rs_rc=$?
pings=$(grep -c "ping data" "$log/rping.cli")
relayed=$(($(ur_ctr "$p-b" dp_relayed_to_daemon) - r0))/$(($(ur_ctr "$p-b" dp_relayed_to_wire) - w0))
if [ $rc = 0 ] && [ $rs_rc = 0 ] && [ "$pings" = 20 ] && [ "${relayed%/*}" -gt 0 ] && [ "${relayed#*/}" -gt 0 ]; then
	ok "rping: 20 pings; the client's side relayed $relayed frames from/to the wire"
else
	bad "rping: exit $rc/$rs_rc, $pings pings, relayed $relayed"
	tail -n 3 "$log/rping.cli" "$log/rping.srv"
fi

echo "== a second pair joins mid-transfer"
bw_pair first "$port" ib_write_bw -s 65536 -D 8
first_srv=$srv first_cli=$cli first=$prog
sleep 2
bw_pair second $((port + 2)) ib_send_bw -s 4096 -D 3
if completed second; then
	ok "the second pair: $(result second)"
else
	bad "the second pair: $(tail -n 3 "$log/second.cli")"
fi
srv=$first_srv cli=$first_cli
if completed first; then
	ok "the first pair: $(result first)"
else
	bad "the first pair: $(tail -n 3 "$log/first.cli")"
fi
if grep -q "asking program $first for the wire back (another program attached)" "$log_b" &&
	grep -q "the wire is back from program $first (asked for)" "$log_b" &&
	[ "$(lent_lines b "$first")" -ge 2 ]; then
	ok "b's daemon asked $first for the wire when the second came, and lent it again after"
else
	bad "b's daemon did not recall and lend again: $(grep "pass-through" "$log_b" | tail -6)"
fi

echo "== the borrower killed mid-transfer"
bw_pair killed "$port" ib_write_bw -s 65536 -D 10
sleep 1.5
kill -KILL "$prog" "$(child_of $srv ib_write_bw)" 2>/dev/null
wait "$cli" "$srv" 2>/dev/null
sleep 0.5
if grep -q "the wire is back from program $prog (it left)" "$log_b"; then
	ok "b's daemon took the wire back from the killed borrower $prog"
else
	bad "no take-back after the borrower was killed: $(grep "pass-through" "$log_b" | tail -4)"
fi
bw_pair after "$port" ib_write_bw -s 65536 -D 2
if completed after && [ "$(lent_lines b "$prog")" -ge 1 ]; then
	ok "the next pair borrowed the wire: $(result after)"
else
	bad "the next pair ($prog, lent to it $(lent_lines b "$prog") times): $(tail -n 2 "$log/after.cli" | tr -s ' \t\n' ' ')"
fi

relay_drops() { echo $(($(ur_ctr "$p-a" dp_relay_dropped) + $(ur_ctr "$p-b" dp_relay_dropped))); }
# a dead switch takes what is relayed to it (counted): not a fault here
drops_before_crash=$(relay_drops)
echo "== the switch killed under a borrower (relay drops so far: $(relay_drops))"
bw_pair crash "$port" ib_write_bw -s 65536 -D 8 -u 18
sleep 1.5
w=$(ip netns exec "$p-b" "$UROCE" link show uroce0 | awk '/daemon uroced pid/ { print $8 }')
kill -KILL "$w"
if completed crash && [ "$(lent_lines b "$prog")" -ge 2 ]; then
	ok "switch $w killed: the transfer completed and the restarted switch lent the wire again: $(result crash)"
else
	bad "switch $w killed: $(tail -n 2 "$log/crash.cli" | tr -s ' \t\n' ' '); lent to $prog $(lent_lines b "$prog") times"
	tail -n 12 "$log_b" "$log_a"
	ip netns exec "$p-b" "$UROCE" stat uroce0 | grep -E "retrans|timeout|seq|dp_switch|borrow|relay|link"
	ip netns exec "$p-a" "$UROCE" stat uroce0 | grep -E "retrans|timeout|seq|dp_switch|borrow|relay|link"
fi

drops_crash=$(($(relay_drops) - drops_before_crash))
echo "== a borrower stopped (relay drops so far: $(relay_drops))"
bw_pair stopped "$port" ib_write_bw -s 65536 -D 10 -u 18
stopped=$prog stopped_srv=$srv stopped_cli=$cli
sleep 1.5
kill -STOP "$stopped"
bw_pair beside $((port + 2)) ib_send_bw -s 4096 -D 5
# continued while the second pair still runs: it must let go of the rings
# the daemon took, and the daemon's wire must carry on without it
taken="taken back from program $stopped (not given back 1 s after we asked)"
for ((i = 0; i < 40; i++)); do
	grep -q "$taken" "$log_b" && break
	sleep 0.1
done
kill -CONT "$stopped"
if completed beside && grep -q "$taken" "$log_b"; then
	ok "b's daemon took the wire from stopped $stopped; a second pair ran meanwhile and after it continued: $(result beside)"
else
	bad "with $stopped stopped: $(tail -n 2 "$log/beside.cli" | tr -s ' \t\n' ' '); $(grep "pass-through" "$log_b" | tail -3)"
fi
srv=$stopped_srv cli=$stopped_cli
if completed stopped; then
	ok "continued, $stopped completed: $(result stopped)"
else
	bad "continued, $stopped did not complete: $(tail -n 2 "$log/stopped.cli" | tr -s ' \t\n' ' ')"
fi
echo "== a borrower stopped while another program comes and goes"
# the daemon takes the wire, then lends it again to the stopped program,
# alone again: continued, it finds its old loan taken and a new one waiting
bw_pair alone "$port" ib_write_bw -s 65536 -D 8 -u 18
sleep 1.5
kill -STOP "$prog"
"${in_b[@]}" ibv_devinfo -d uroce0 >/dev/null 2>&1
lent_before=$(lent_lines b "$prog")
for ((i = 0; i < 40; i++)); do
	[ "$(lent_lines b "$prog")" -gt "$lent_before" ] && break
	sleep 0.1
done
relent=$(($(lent_lines b "$prog") - lent_before))
kill -CONT "$prog"
if completed alone && [ $relent = 1 ] && grep -q "taken back from program $prog " "$log_b"; then
	ok "stopped $prog lost the wire, was lent it again, and completed once continued: $(result alone)"
else
	bad "stopped $prog alone: lent again $relent times; $(tail -n 2 "$log/alone.cli" | tr -s ' \t\n' ' '); $(grep "pass-through" "$log_b" | tail -4)"
fi
drops=$(($(relay_drops) - drops_crash))
if [ "$drops" = 0 ]; then
	ok "no relayed frame dropped on either side ($drops_crash while b's switch was dead)"
else
	bad "$drops relayed frames dropped ($drops_crash more while b's switch was dead): a $(ur_ctr "$p-a" dp_relay_dropped), b $(ur_ctr "$p-b" dp_relay_dropped)"
fi

echo "== pass_through off (relay drops so far: $(relay_drops))"
read -r _ pb <<<"$(ur_memif_ports "$p")"
ip netns exec "$p-b" "$UROCE" link del uroce0 &&
	ip netns exec "$p-b" "$UROCE" link add uroce0 netdev "${p}b0" port "$pb" pass_through off ||
	bad "cannot make b's device again with pass_through off"
bw_pair off "$port" ib_write_bw -s 65536 -D 2
if completed off; then
	iters=$(grep -E "$bw_re" "$log/off.cli" | awk '{ print $2 }')
	switched=$(ur_ctr "$p-b" dp_switch_frames)
	# 16 frames of 4 KiB for each 64 KiB message, each way through the switch
	if [ "$(ur_ctr "$p-b" dp_wire_borrowed)" = 0 ] && [ "$switched" -ge $((iters * 16)) ]; then
		ok "pass_through off: b's switch moved $switched frames for $iters messages: $(result off)"
	else
		bad "pass_through off: borrowed $(ur_ctr "$p-b" dp_wire_borrowed), b's switch moved $switched frames for $iters messages"
	fi
else
	bad "pass_through off: $(tail -n 3 "$log/off.cli")"
fi
exit $((fails > 0))
