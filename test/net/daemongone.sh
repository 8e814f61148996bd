#!/bin/bash
# The device daemon gone under the programs attached to its switch
# (docs/daemon.md, docs/shared-device.md 4.8), with the stock
# ibv_asyncwatch and ib_write_bw and test/verbs/daemon_gone, all on side b
# of two namespaces whose devices are joined by memif:
#  - b's switch killed mid-transfer: every program hears
#    IBV_EVENT_PORT_ERR, then IBV_EVENT_PORT_ACTIVE once the restarted
#    switch takes it again, and the transfer completes;
#  - `uroce link del` on b under load: after 5 s without a daemon every
#    program hears IBV_EVENT_DEVICE_FATAL, outstanding WRs are flushed,
#    later verbs fail with EIO (daemon_gone checks), the ib_write_bw client
#    exits with an error, rping's listening server on b hears
#    RDMA_CM_EVENT_DEVICE_REMOVAL, nothing hangs, no process and no file
#    is left.
#   daemongone.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u
source "$(dirname "$0")/lib.sh" "$1"
ur_need perftest ib_write_bw
ur_need ibverbs-utils ibv_asyncwatch
ur_need rdmacm-utils rping
gone=$build/test/daemon_gone

ur_test_pair dg memif
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
	# what ran under `timeout` (killed above, its child was not) or was
	# started without a pid kept; the daemons go with `link del`
	local pid
	for pid in $(ip netns pids "$p-a" 2>/dev/null) $(ip netns pids "$p-b" 2>/dev/null); do
		case $(cat "/proc/$pid/comm" 2>/dev/null) in
		uroce*) ;;
		*) kill -9 "$pid" 2>/dev/null ;;
		esac
	done
	wait 2>/dev/null
	ur_pair_down "$p"
	rm -rf "$log"
}
trap cleanup EXIT INT TERM

bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
link_field() {
	ip netns exec "$p-b" "$UROCE" link show uroce0 | awk -v f="$1" '/daemon uroced pid/ { print $f }'
}
# seconds since $t0, in ms
ms_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
# seen_after FILE A B: a line matching B after one matching A
seen_after() { awk -v a="$2" -v b="$3" '$0 ~ a { e = 1 } e && $0 ~ b { f = 1 } END { exit !f }' "$1"; }
# wait_for FILE REGEX SECONDS: 0 once FILE holds a line matching REGEX
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}

# ur_in as a command, not a function: a function in the background is a
# subshell, and $! would name it instead of the program
in_a=(ip netns exec "$p-a" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _)
in_b=(ip netns exec "$p-b" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _)

# ibv_asyncwatch prints every event until it is stopped
"${in_b[@]}" stdbuf -oL ibv_asyncwatch -d uroce0 >"$log/watch" 2>&1 &
pids+=($!)
"${in_b[@]}" timeout 60 "$gone" uroce0 "$net.1" 50 >"$log/gone" 2>&1 &
gpid=$!
pids+=($gpid)
wait_for "$log/gone" "outstanding on QP" 10 || bad "daemon_gone did not start: $(tail -3 "$log/gone")"

echo "== b's switch killed mid-transfer"
"${in_a[@]}" timeout 60 ib_write_bw -d uroce0 -x 1 -D 10 -u 18 -p "$port" >"$log/crash.srv" 2>&1 &
spid=$!
ur_server_up "$p-a" $spid -p "$port"
"${in_b[@]}" timeout 60 ib_write_bw -d uroce0 -x 1 -D 10 -u 18 -p "$port" "$net.1" \
	>"$log/crash.cli" 2>&1 &
cpid=$!
# and a pair on b's device alone: its frames never leave the host
"${in_b[@]}" timeout 60 ib_write_bw -d uroce0 -x 1 -D 10 -u 18 -p $((port + 2)) >"$log/loop.srv" 2>&1 &
lspid=$!
ur_server_up "$p-b" $lspid -p $((port + 2))
"${in_b[@]}" timeout 60 ib_write_bw -d uroce0 -x 1 -D 10 -u 18 -p $((port + 2)) "$net.2" \
	>"$log/loop.cli" 2>&1 &
lcpid=$!
sleep 1.5
w=$(link_field 8)
t0=$(date +%s.%N)
kill -KILL "$w"
if wait_for "$log/watch" "PORT_ERR" 3; then
	err_ms=$(ms_since "$t0")
	for ((i = 0; i < 50; i++)); do
		seen_after "$log/watch" PORT_ERR PORT_ACTIVE && break
		sleep 0.1
	done
	if seen_after "$log/watch" PORT_ERR PORT_ACTIVE; then
		ok "switch $w killed: ibv_asyncwatch saw PORT_ERR (within $err_ms ms), then PORT_ACTIVE (within $(ms_since "$t0") ms)"
	else
		bad "switch $w killed: no PORT_ACTIVE after PORT_ERR"
		cat "$log/watch"
		tail -n 25 "$(link_field 6)"
	fi
else
	bad "switch $w killed: no PORT_ERR within 3 s"
	cat "$log/watch"
fi
# iterations counted, not only a line of zeros
if wait "$cpid" && wait "$spid" && grep -E "$bw_re" "$log/crash.cli" | awk '$2 > 0 { f = 1 } END { exit !f }'; then
	ok "the transfer completed: $(grep -E "$bw_re" "$log/crash.cli" | tr -s ' \t' ' ')"
else
	bad "the transfer did not complete"
	tail -n 5 "$log/crash.cli" "$log/crash.srv"
fi
# a port down carries nothing, not even between the device's own QPs
down=$(ip netns exec "$p-b" "$UROCE" stat uroce0 -a | awk '$1 == "dp_tx_loopback_link_down" { print $2 }')
if wait "$lcpid" && wait "$lspid" && grep -E "$bw_re" "$log/loop.cli" | awk '$2 > 0 { f = 1 } END { exit !f }' &&
	[ "${down:-0}" -gt 0 ]; then
	ok "the pair on b alone completed; $down of its frames dropped while the port was down"
else
	bad "the pair on b alone: dp_tx_loopback_link_down ${down:-0} (want > 0), or it did not complete"
	tail -n 5 "$log/loop.cli" "$log/loop.srv"
fi
if seen_after "$log/gone" "port error, port down" "port active, port active"; then
	ok "daemon_gone: port DOWN after PORT_ERR, ACTIVE after PORT_ACTIVE"
else
	bad "daemon_gone did not see the port go down and up"
	cat "$log/gone"
fi

echo "== link del on b under load"
# timeout 20 (4.3 s, 8 tries): only the device's end ends these QPs
"${in_a[@]}" timeout 60 ib_write_bw -d uroce0 -x 1 -D 30 -u 20 -p $((port + 1)) >"$log/del.srv" 2>&1 &
spid=$!
pids+=($spid)
ur_server_up "$p-a" $spid -p $((port + 1))
"${in_b[@]}" timeout 60 ib_write_bw -d uroce0 -x 1 -D 30 -u 20 -p $((port + 1)) "$net.1" \
	>"$log/del.cli" 2>&1 &
cpid=$!
pids+=($cpid)
# and an rdma_cm listener bound to b's address (the stock rping's server;
# a connection would end in RETRY_EXC_ERR before the device is declared
# dead, its CM timeout being shorter than 5 s)
"${in_b[@]}" timeout 60 rping -s -a "$net.2" -p $((port + 3)) >"$log/rping.srv" 2>&1 &
rspid=$!
pids+=($rspid)
sleep 3
dir=$(ip netns exec "$p-b" "$UROCE" env | sed -n 's|^export SYSFS_PATH=\(.*\)/sys$|\1|p')
t0=$(date +%s.%N)
ip netns exec "$p-b" "$UROCE" link del uroce0
if wait_for "$log/watch" "DEVICE_FATAL" 10; then
	ok "ibv_asyncwatch saw DEVICE_FATAL $(ms_since "$t0") ms after link del"
else
	bad "no DEVICE_FATAL within 10 s of link del"
	cat "$log/watch"
fi
wait "$cpid"
rc=$?
# a flushed WRITE (status 5) or a refused post: the device's end, not the peer's silence
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -Eq "status 5|post" "$log/del.cli"; then
	ok "ib_write_bw client exited with $rc after $(ms_since "$t0") ms: $(grep -Ei 'status|failed|couldn|error' "$log/del.cli" | head -3 | tr -s ' \n' ' ')"
else
	bad "ib_write_bw client: exit $rc (want an error, not success nor the timeout)"
	tail -n 5 "$log/del.cli"
fi
wait "$gpid"
rc=$?
if [ "$rc" = 0 ]; then
	ok "daemon_gone: $(grep -E '^daemon_gone: .*(flushed|EIO)' "$log/gone" | sed 's/daemon_gone: //' | tr '\n' ';')"
else
	bad "daemon_gone exited with $rc"
	cat "$log/gone"
fi
# rdma_cm tells the ids on the dead device, as the kernel's does
wait "$rspid"
rc=$?
if grep -q "device removal" "$log/rping.srv" && [ "$rc" != 124 ]; then
	ok "rping's server heard RDMA_CM_EVENT_DEVICE_REMOVAL and exited ($rc) after $(ms_since "$t0") ms"
else
	bad "rping's server: exit $rc, no DEVICE_REMOVAL"
	tail -n 5 "$log/rping.srv"
fi
# ibv_asyncwatch reads events until it is stopped; the server on a has lost its client
kill "${pids[0]}" "$spid" 2>/dev/null
wait "${pids[0]}" "$spid" 2>/dev/null
left=$(ip netns pids "$p-b" | xargs -r ps -o pid=,comm= -p)
if [ -z "$left" ]; then
	ok "no process left in $p-b"
else
	bad "processes left in $p-b: $left"
fi
if [ -z "$dir" ]; then
	bad "no run directory for b's device"
elif [ -e "$dir" ]; then
	bad "after link del, $dir holds: $(cd "$dir" && find . | tr '\n' ' ')"
else
	ok "link del left nothing of b's run tree ($dir)"
fi
exit $((fails > 0))
