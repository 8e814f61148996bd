#!/bin/bash
# The late answerer (provider/answerer.c): a responder whose program gets no
# CPU must still answer within the requester's QP timeout, as a NIC answers
# while its host is busy. An ib_write_bw server runs SCHED_IDLE on CPU 0
# (chrt -i 0); 2 s into the transfer, two busy loops take CPU 0 for 4 s, so
# neither its application nor its progress thread runs for seconds at a
# time. The client on CPU 1 (QP timeout 14, 67 ms; 7 retries) must finish
# with no local ACK timeout, and the server's device must count the passes
# its answerer ran (dp_late_passes). With the answerer off
# (late_answer.sh BUILD_DIR off, UROCE_ANSWER_NS=0) the client's QP runs out
# of retries: the check that this test can fail.
#   late_answer.sh BUILD_DIR [off]
set -u
# shellcheck source=test/net/lib.sh
source "$(dirname "$0")/lib.sh" "$1"
ur_need perftest ib_write_bw
ur_need util-linux chrt taskset
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs 2 CPUs"; exit 77; }
if [ "${2:-}" = off ]; then
	export UROCE_ANSWER_NS=0
fi
fails=0
ur_test_pair la

hogs=()
stop_hogs() { [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null; hogs=(); }
trap 'stop_hogs; cleanup' EXIT INT TERM

bw=(ib_write_bw -d uroce0 -x 1 -s 65536 -D 8 -F -p "$port")
ur_in "$p-a" taskset -c 0 chrt -i 0 timeout 60 "${bw[@]}" >"$log/srv" 2>&1 &
spid=$!
ur_server_up "$p-a" $spid "${bw[@]}"
ur_in "$p-b" taskset -c 1 timeout 60 "${bw[@]}" "$ctl" >"$log/cli" 2>&1 &
cpid=$!
sleep 2
for _ in 1 2; do
	taskset -c 0 bash -c 'while :; do :; done' &
	hogs+=($!)
done
sleep 4
stop_hogs
wait $cpid
rc_c=$?
wait $spid
rc_s=$?

late=$(ur_ctr "$p-a" dp_late_passes)
tmo=$(ur_ctr "$p-b" local_ack_timeout_err)
exc=$(ur_ctr "$p-b" retry_exceeded)
mbps=$(awk '$1 == 65536 { print $4 }' "$log/cli")
echo "server starved 4 s: client exit $rc_c, server exit $rc_s, ${mbps:-no} MB/s average," \
	"$late late passes, $tmo local ACK timeouts, $exc retries exhausted"
if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || [ "$tmo" -ne 0 ] || [ "$late" -eq 0 ]; then
	echo "FAIL"
	sed 's/^/  client: /' "$log/cli" | tail -8
	sed 's/^/  server: /' "$log/srv" | tail -8
	fails=1
fi
[ $fails -eq 0 ] && echo "all passed"
exit $fails
