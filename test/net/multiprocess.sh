#!/bin/bash
# Several programs on one uroce device (docs/multi-process.md), between two
# network namespaces over af_packet, with the stock perftest binaries:
#   1. One ib_write_bw pair alone, then a round of four ib_write_bw pairs on
#      different -p ports, four ib_send_lat pairs (event mode) and a victim
#      ib_write_bw pair, all started at once, then one pair alone again.
#      The victim's target is killed with SIGKILL while the others run: its
#      peer must fail with IBV_WC_RETRY_EXC_ERR (status 12), not hang. The
#      eight others must exit 0 with their result lines; QP numbers must be
#      distinct on each device; no packet may reach a process that does not
#      own its QP (rx_drop_unknown_qp ~ 0); the round's aggregate
#      ib_write_bw must be at least MP_MIN_PCT (80) % of the mean of the
#      single pairs around it. A shared 2-CPU machine is noisy: below the
#      mark, another round (without the victim) and single pair are run, up
#      to MP_ROUNDS (3) rounds in all. A perftest that finished but could
#      not calibrate its cycle counter to report ("Can't produce a report",
#      its server exited 0) is noted, not failed: a single pair then runs
#      once more, and a round's aggregate counts the pairs that reported
#      (at least 3 of 4, scaled to 4).
#   2. Three pairs with exact WRITE counts at once: the device total, read
#      after they have all exited, must grow by exactly what they received.
#   3. Afterwards no process holds QP numbers, a new pair runs, and the
#      hw_counters files agree with `uroce stat`.
# Prints per-pair figures, the CPU time of every process and what each
# round lost to timeouts. Exit 77 without root, namespaces or perftest.
#   multiprocess.sh BUILD_DIR
set -u
build=${1:?usage: multiprocess.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
self=$here/$(basename "$0")

# --run CPUFILE CMD...: run CMD, then record its user and system CPU seconds
if [ "${1:-}" = --run ]; then
	cpufile=$2
	shift 2
	"$@"
	rc=$?
	# `times` line 2: the children's user and system time, as 0m1.234s
	# (redirected, not piped: a pipeline would run it in a subshell)
	times >"$cpufile.raw"
	sed -n 2p "$cpufile.raw" | sed -E 's/([0-9]+)m([0-9.]+)s/\1 \2/g' |
		awk '{printf "%.2f %.2f\n", $1 * 60 + $2, $3 * 60 + $4}' >"$cpufile"
	rm -f "$cpufile.raw"
	exit $rc
fi

export UROCE=$build/tools/uroce
# shellcheck source=../../tools/netns.sh
source "$here/../../tools/netns.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }
for t in ib_write_bw ib_send_lat ibv_rc_pingpong; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done

# Each ib_write_bw reports the rate between MARGIN s after its start and
# MARGIN s before its end (perftest -D/-f). The pairs of a round start at
# once, and each program's start-up costs about 0.8 CPU s (perftest's clock
# calibration spin, DPDK, the af_packet rings): 18 of them keep two cores
# busy for some 7 s, so a round's windows open after that; a pair alone
# needs no such wait.
dur=${MP_DURATION:-18}
margin=${MP_MARGIN:-7}
single_dur=${MP_SINGLE_DURATION:-8}
single_margin=${MP_SINGLE_MARGIN:-3}
lat_iters=${MP_LAT_ITERS:-300}
# QP local ACK timeout of the measured pairs: 17 is 0.54 s. perftest's 14
# (67 ms) is shorter than the time a receiver can wait for a core when 17
# programs share two (more so on a machine shared with other work): its
# peer then resends a window the receiver still holds, and go-back-N's
# spurious retransmissions would be what the ratio measures. The victim
# keeps 14 so that its peer gives up in about half a second.
qp_timeout=${MP_QP_TIMEOUT:-17}
min_pct=${MP_MIN_PCT:-80}
rounds=${MP_ROUNDS:-3} # at most, while the aggregate is below the mark
p=mp$(($$ % 100000))
net=10.64.$((RANDOM % 200 + 20))
log=$(mktemp -d /tmp/uroce_mp.XXXXXX)
fails=0
all_iters=0 # 64 KiB WRITEs that every ib_write_bw client reported
declare -A pid

# shellcheck disable=SC2317 # invoked by the traps
cleanup() {
	trap - EXIT INT TERM
	local left
	left=$(jobs -pr)
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086
		kill $left 2>/dev/null
		sleep 0.5
		# shellcheck disable=SC2086
		kill -9 $(jobs -pr) 2>/dev/null
		wait 2>/dev/null
	fi
	ur_pair_down "$p"
	[ $fails -eq 0 ] && rm -rf "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

ur_pair_up "$p" "$net" 9000 || { echo "FAIL: setting up namespaces"; exit 1; }
echo "== namespaces $p-a/$p-b, veth MTU 9000, af_packet, log in $log"

# stat NS COUNTER: the device-wide total of COUNTER on uroce0 in namespace NS
stat() {
	ip netns exec "$1" "$UROCE" stat uroce0 -a | awk -v c="$2" '$1 == c {print $2}'
}
users() {
	ip netns exec "$1" "$UROCE" stat uroce0 | sed -nE 's/.*: ([0-9]+) process.*/\1/p'
}

# start NAME SIDE TIMEOUT CMD...: run CMD in namespace $p-SIDE under the CPU
# recorder; output in $log/NAME, CPU in $log/NAME.cpu, pid in pid_NAME
start() {
	local name=$1 side=$2 to=$3
	shift 3
	ur_in "$p-$side" timeout "$to" "$self" --run "$log/$name.cpu" "$@" >"$log/$name" 2>&1 &
	pid[$name]=$!
}

# finish NAME: wait for NAME; its exit status in $rc
finish() {
	wait "${pid[$1]}"
	rc=$?
}

bw_re='^ +65536 +[0-9]+ +[0-9.]+ +[0-9.]+'
lat_re='^ +2 +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
bw_of() { grep -E "$bw_re" "$log/$1" | tail -1 | awk '{print $4}'; }
iters_of() { grep -E "$bw_re" "$log/$1" | tail -1 | awk '{print $2}'; }

# listening PORT...: wait (up to 20 s) until servers in a listen on every PORT:
# perftest clients do not retry, and a loaded machine starts programs slowly
listening() {
	local port up
	for _ in $(seq 1 200); do
		up=1
		for port in "$@"; do
			[ -n "$(ip netns exec "$p-a" ss -Hltn "sport = :$port")" ] || { up=0; break; }
		done
		[ $up = 1 ] && return 0
		sleep 0.1
	done
	fail "servers not listening on ports $* after 20 s"
}

# pair KIND NAME PORT ARGS...: server in a, client in b
pair() {
	local kind=$1 name=$2 port=$3
	shift 3
	start "$name-s" a 90 "$kind" -d uroce0 -x 1 -p "$port" "$@"
	listening "$port"
	start "$name-c" b 90 "$kind" -d uroce0 -x 1 -p "$port" "$@" "$net.1"
}

# single NAME: one ib_write_bw pair alone; its MB/s in $bw (empty on
# failure); once more if perftest could not calibrate its clock
single() {
	local rc_s try
	for try in 1 2; do
		pair ib_write_bw "$1" 18600 -s 65536 -D "$single_dur" -f "$single_margin" -u "$qp_timeout"
		finish "$1-s"
		rc_s=$rc
		finish "$1-c"
		if [ "$rc_s" != 0 ] || [ $try = 2 ] || ! ur_perftest_unreported "$log/$1-c"; then
			break
		fi
		echo "note single pair $1: perftest could not calibrate its clock; once more" \
			"(the first try's output: $log/$1-?.try1)"
		for f in "$log/$1"-[sc] "$log/$1"-[sc].cpu; do mv "$f" "$f.try1"; done
	done
	bw=$(bw_of "$1-c")
	all_iters=$((all_iters + $(iters_of "$1-c") + 0))
	if [ "$rc_s" != 0 ] || [ "$rc" != 0 ] || [ -z "$bw" ]; then
		fail "single ib_write_bw pair $1 (server $rc_s, client $rc)"
		tail -n 5 "$log/$1-c" "$log/$1-s"
		bw=
	fi
}

# together R [victim]: round R of four ib_write_bw and four ib_send_lat pairs
# at once, with the victim pair if asked; sets agg and checks exits
together() {
	local r=$1 victim=${2:-} n i side kind re rc_s reported
	for i in 1 2 3 4; do
		start "bw$i-s$r" a 90 ib_write_bw -d uroce0 -x 1 -p $((18600 + i)) -s 65536 -D "$dur" -f "$margin" -u "$qp_timeout"
		start "lat$i-s$r" a 90 ib_send_lat -d uroce0 -x 1 -p $((18610 + i)) -s 2 -n "$lat_iters" -e -u "$qp_timeout"
	done
	if [ -n "$victim" ]; then
		# a target that calls no verb once connected, like every ib_write_bw
		# server; light (one 1 KiB WRITE in flight) so the others keep the wire
		ur_in "$p-a" stdbuf -oL ib_write_bw -d uroce0 -x 1 -p 18620 -s 1024 -t 1 -D 60 \
			>"$log/victim-s" 2>&1 &
	fi
	listening 18601 18602 18603 18604 18611 18612 18613 18614 ${victim:+18620}
	for i in 1 2 3 4; do
		start "bw$i-c$r" b 90 ib_write_bw -d uroce0 -x 1 -p $((18600 + i)) -s 65536 -D "$dur" -f "$margin" -u "$qp_timeout" "$net.1"
		start "lat$i-c$r" b 90 ib_send_lat -d uroce0 -x 1 -p $((18610 + i)) -s 2 -n "$lat_iters" -e -u "$qp_timeout" "$net.1"
	done
	if [ -n "$victim" ]; then
		# line-buffered, to see when its WRITEs start
		start victim-c b 90 stdbuf -oL ib_write_bw -d uroce0 -x 1 -p 18620 -s 1024 -t 1 -D 60 "$net.1"
		kill_victim
	fi
	for kind in bw lat; do
		for i in 1 2 3 4; do
			for side in s c; do
				n=$kind$i-$side$r
				finish "$n"
				[ $side = s ] && rc_s=$rc
				re=$bw_re
				[ $kind = lat ] && re=$lat_re
				if [ "$rc" != 0 ] || { [ $side = c ] && ! grep -Eq "$re" "$log/$n"; }; then
					if [ $side = c ] && [ "$rc_s" = 0 ] && ur_perftest_unreported "$log/$n"; then
						echo "note $n finished, but perftest could not calibrate its clock to report"
						continue
					fi
					fail "$n: exit $rc"
					tail -n 4 "$log/$n" | sed 's/^/  /'
				fi
			done
		done
	done
	# the aggregate of the pairs that reported, for four (each pair's share
	# is about equal); fewer than three is not a measurement
	agg=0 reported=0
	for i in 1 2 3 4; do
		[ -n "$(bw_of "bw$i-c$r")" ] && reported=$((reported + 1))
		agg=$(awk -v a="$agg" -v b="$(bw_of "bw$i-c$r")" 'BEGIN {print a + b}')
		all_iters=$((all_iters + $(iters_of "bw$i-c$r") + 0))
	done
	if [ $reported -lt 3 ]; then
		fail "round $r: $reported of 4 ib_write_bw pairs reported a rate"
		agg=0
	elif [ $reported -lt 4 ]; then
		agg=$(awk -v a="$agg" -v n=$reported 'BEGIN {printf "%.2f", a * 4 / n}')
		echo "     round $r: 3 of 4 ib_write_bw pairs reported; aggregate taken as 4/3 of theirs"
	fi
}

# kill_victim: SIGKILL the victim's target once WRITEs flow; its peer must
# see IBV_WC_RETRY_EXC_ERR (status 12) and exit, not hang
kill_victim() {
	local t0
	for _ in $(seq 1 150); do
		grep -q "^ *#bytes" "$log/victim-c" 2>/dev/null && break
		sleep 0.1
	done
	sleep 1.5
	during=$(users "$p-a")
	pid_victim=$(pgrep -xf "ib_write_bw -d uroce0 -x 1 -p 18620 -s 1024 -t 1 -D 60")
	if [ -z "$pid_victim" ] || [ "$(cat "/proc/$pid_victim/comm" 2>/dev/null)" != ib_write_bw ]; then
		fail "victim's target is not running before the kill"
		tail -n 5 "$log/victim-s" "$log/victim-c"
		return
	fi
	kill -9 "$pid_victim"
	t0=$(date +%s.%N)
	finish victim-c
	t0=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	if [ "$rc" = 0 ] || ! grep -q "status 12" "$log/victim-c"; then
		fail "victim's peer: exit $rc, and no retry-exceeded completion"
		tail -n 5 "$log/victim-c"
	else
		echo "ok   kill -9 of a target with $during processes on the device: its peer got" \
			"IBV_WC_RETRY_EXC_ERR and exited after $t0 s"
	fi
}

# tally NAME CPUFILE...: what the device moved and lost since the last tally,
# and the CPU the named ib_write_bw processes spent per GB of it (start-up
# included: about 0.8 s a process)
tally() {
	local name=$1 t d x b cpu
	shift
	t=$(stat "$p-b" local_ack_timeout_err)
	d=$(stat "$p-a" dp_rx_ring_drops)
	x=$(stat "$p-b" retransmitted_packets)
	b=$(stat "$p-a" rx_bytes)
	cpu=$(cat "$@" 2>/dev/null | awk '{s += $1 + $2} END {print s + 0}')
	if [ -n "$name" ]; then
		echo "     $name: $(awk -v b=$((b - ${l_b:-0})) -v c="$cpu" \
			'BEGIN {printf "%.2f GB received, ib_write_bw CPU %.1f s per GB", b / 1e9, (b > 0 ? c * 1e9 / b : 0)}'),"
		echo "       $((t - ${l_t:-0})) local ACK timeouts, $((x - ${l_x:-0})) packets" \
			"retransmitted, $((d - ${l_d:-0})) frames dropped by full receive rings"
	fi
	l_t=$t l_d=$d l_x=$x l_b=$b
}

report() {
	local r=$1 i l
	echo "     pair   result                                  CPU s (user+sys) server / client"
	for i in 1 2 3 4; do
		printf "     bw%d    %-39s %s / %s\n" "$i" "$(bw_of "bw$i-c$r") MB/s" \
			"$(awk '{print $1 + $2}' "$log/bw$i-s$r.cpu" 2>/dev/null)" \
			"$(awk '{print $1 + $2}' "$log/bw$i-c$r.cpu" 2>/dev/null)"
	done
	for i in 1 2 3 4; do
		l=$(grep -E "$lat_re" "$log/lat$i-c$r" | tail -1 |
			awk '{printf "typical %s us, 99%% %s us", $5, $8}')
		printf "     lat%d   %-39s %s / %s\n" "$i" "$l" \
			"$(awk '{print $1 + $2}' "$log/lat$i-s$r.cpu" 2>/dev/null)" \
			"$(awk '{print $1 + $2}' "$log/lat$i-c$r.cpu" 2>/dev/null)"
	done
}

# ratio R: aggregate of round R against the mean of the single pairs around it
ratio() {
	local s
	s=$(awk -v a="$1" -v b="$2" 'BEGIN {print (a + b) / 2}')
	pct=$(awk -v a="$agg" -v s="$s" 'BEGIN {printf "%d", (s > 0 ? 100 * a / s : 0)}')
	echo "     aggregate ib_write_bw $agg MB/s = $pct% of a single pair's $s MB/s" \
		"(mean of $1 before and $2 after)"
}

# ---- 1. one pair alone, then everything at once with a victim, then one pair alone
tally ""
single single1
s1=$bw
tally "single pair" "$log"/single1-?.cpu
[ -n "$s1" ] || exit 1
echo "ok   single ib_write_bw pair: $s1 MB/s"
together 1 victim
[ $fails -eq 0 ] && echo "ok   four ib_write_bw and four ib_send_lat pairs at once: all exited 0 with results"
report 1
tally "round 1" "$log"/bw?-?1.cpu
single single2
s2=$bw
tally "single pair" "$log"/single2-?.cpu
[ -n "$s2" ] || exit 1
ratio "$s1" "$s2"
r=1
while [ "$pct" -lt "$min_pct" ] && [ $r -lt "$rounds" ]; do
	# a shared 2-CPU machine is noisy: measure again, without the victim
	r=$((r + 1))
	echo "     below $min_pct%: round $r"
	before=$bw
	together $r
	report $r
	tally "round $r" "$log"/bw?-?$r.cpu
	single single$((r + 1))
	tally "single pair" "$log"/single$((r + 1))-?.cpu
	ratio "$before" "${bw:-0}"
done
if [ "$pct" -ge "$min_pct" ]; then
	echo "ok   aggregate ib_write_bw $pct% of a single pair's (>= $min_pct%)"
else
	fail "aggregate ib_write_bw $pct% of a single pair's (< $min_pct%)"
fi

# QP numbers: unique on each device over all the processes that ran at once
for side in s c; do
	dup=$(cat "$log"/bw?-${side}1 "$log"/lat?-${side}1 "$log"/victim-$side 2>/dev/null |
		sed -nE 's/.*local address:.*QPN (0x[0-9a-f]+).*/\1/p' | sort | uniq -d)
	n=$(cat "$log"/bw?-${side}1 "$log"/lat?-${side}1 "$log"/victim-$side 2>/dev/null |
		grep -c "local address:")
	if [ -n "$dup" ] || [ "$n" -lt 9 ]; then
		fail "QP numbers on the $side side: $n seen, duplicates: $dup"
	else
		echo "ok   $n QP numbers on the $([ $side = s ] && echo a || echo b) device, all distinct"
	fi
done

# every packet went to the one process that owns its QP
unknown=$(stat "$p-a" rx_drop_unknown_qp)
accepted=$(stat "$p-a" rx_packets)
if [ "$unknown" -gt $((accepted / 1000 + 16)) ]; then
	fail "$unknown packets reached a process without their QP (of $accepted accepted)"
else
	echo "ok   $accepted packets accepted on the a device, $unknown for a QP the process did not have"
fi

# ---- 2. device-wide counters: three pairs with exact WRITE counts, at once;
# by the time they are read every process has exited. Each 64 KiB WRITE is
# 16 packets at path MTU 4096, and the responder counts each packet once.
w0=$(stat "$p-a" rx_write_requests)
want=0
for i in 1 2 3; do
	pair ib_write_bw "cnt$i" $((18640 + i)) -s 65536 -n $((i * 300)) -u "$qp_timeout"
	want=$((want + i * 300 * 16))
done
for i in 1 2 3; do
	finish "cnt$i-s"
	[ "$rc" = 0 ] || fail "cnt$i-s: exit $rc"
	finish "cnt$i-c"
	[ "$rc" = 0 ] || fail "cnt$i-c: exit $rc"
done
got=$(($(stat "$p-a" rx_write_requests) - w0))
if [ "$got" != "$want" ]; then
	fail "device total rx_write_requests grew by $got, the three pairs wrote $want packets"
else
	echo "ok   device total rx_write_requests grew by exactly the $want packets three processes received"
fi

# ---- 3. the device afterwards: free, usable, and its counter files final
left=$(users "$p-a")
start after-s a 60 ibv_rc_pingpong -d uroce0 -g 1 -p 18630 -n 100
listening 18630
start after-c b 60 ibv_rc_pingpong -d uroce0 -g 1 -p 18630 -n 100 "$net.1"
finish after-s
rc_s=$rc
finish after-c
rc_c=$rc
if [ "$left" != 0 ] || [ "$rc_s" != 0 ] || [ "$rc_c" != 0 ]; then
	fail "device afterwards: $left users left, new pair exited $rc_s/$rc_c"
	tail -n 4 "$log/after-c" "$log/after-s"
else
	echo "ok   afterwards: no process holds QP numbers, and a new pair runs"
fi
hw=$(cat "$(ip netns exec "$p-a" "$UROCE" env | sed -nE 's/export SYSFS_PATH=//p')/class/infiniband/uroce0/ports/1/hw_counters/rx_write_requests")
st=$(stat "$p-a" rx_write_requests)
if [ "$hw" != "$st" ]; then
	fail "hw_counters rx_write_requests $hw, uroce stat $st"
else
	echo "ok   hw_counters and uroce stat agree on the device total: rx_write_requests $st"
fi

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed (logs in $log)"
exit $((fails > 0))
