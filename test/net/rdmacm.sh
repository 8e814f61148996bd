#!/bin/bash
# librdmacm programs over uroce (issue 22), unmodified, between two network
# namespaces: Debian's rdmacm-utils (rping, ucmatose, udaddy, rdma_server/
# rdma_client, rstream and riostream over rsockets), perftest -R, qperf -cm1,
# libfabric's verbs MSG and verbs;ofi_rxm RDM endpoints; and the failures a
# user must see quickly: a port nobody listens on (REJECTED, reason 8, as
# Soft-RoCE's kernel rdma_cm answers: test/data/cm/rxe-cm-reject.*) and an
# address nobody answers (an error event, not a hang).
#   rdmacm.sh BUILD_DIR [CHECK...]
# CHECK: rping ucmatose udaddy rdma_server perftest perftest_ud rstream qperf fabric
# twoservers housekeeper reject unreachable (default: all). Exit 77 (skip) without root, namespaces
# or the packages the chosen checks run. The environment reaches the programs
# (UROCE_DEBUG=1 for the provider's reasons); RDMACM_KEEP=DIR keeps every
# program's whole output there; RDMACM_ONE_NS=1 runs the clients in the
# servers' namespace, two programs on one device (issue 25's shared device).
set -u
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh" "$1"
shift
ref=$(cd "$(dirname "$0")/../data/cm" && pwd) # Soft-RoCE's output of the same programs

all="rping ucmatose udaddy rdma_server perftest perftest_ud rstream qperf fabric twoservers housekeeper killed reject unreachable"
checks=${*:-$all}
for c in $checks; do
	case " $all " in
	*" $c "*) ;;
	*)
		echo "usage: $(basename "$0") BUILD_DIR [CHECK...]; CHECK is one of: $all"
		exit 2
		;;
	esac
done
want() { case " $checks " in *" $1 "*) return 0 ;; esac; return 1; }

if want rping || want twoservers || want housekeeper || want killed || want reject || want unreachable; then
	ur_need rdmacm-utils rping
fi
want ucmatose && ur_need rdmacm-utils ucmatose
want udaddy && ur_need rdmacm-utils udaddy
want rdma_server && ur_need rdmacm-utils rdma_server rdma_client
want housekeeper && ur_need ibverbs-utils ibv_rc_pingpong
want rstream && ur_need rdmacm-utils rstream riostream
want perftest && ur_need perftest ib_write_bw ib_read_bw ib_send_bw
want qperf && ur_need qperf qperf
want fabric && ur_need libfabric-bin fi_pingpong

now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# stop PID: end the job PID and every process under it (ours alone: the
# programs a check started through ur_in), TERM first, then KILL.
stop() {
	local pid=$1 kids k
	kids=$(pgrep -P "$pid")
	for k in $kids; do
		stop "$k"
	done
	running "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		running "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	return 0
}

# running PID: PID is there and not a zombie waiting for our `wait`
running() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s:0:1}" != Z ]
}

# finish PID SECONDS: the exit status of job PID, given SECONDS to end by
# itself before it is stopped (then 143 or 137)
finish() {
	local pid=$1 t=$(($2 * 10))
	while [ "$t" -gt 0 ] && running "$pid"; do
		sleep 0.1
		t=$((t - 1))
	done
	running "$pid" && stop "$pid"
	wait "$pid"
}

ur_test_pair cm
# nothing a check started outlives the test, whatever stops it
# shellcheck disable=SC2317 # invoked by the trap
stop_all() {
	local j
	for j in $(jobs -p); do
		stop "$j"
	done
	[ -z "${RDMACM_KEEP:-}" ] || { mkdir -p "$RDMACM_KEEP" && cp -r "$log/." "$RDMACM_KEEP/"; }
	cleanup
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
base=$port
cns=$p-b # where the clients run
[ -z "${RDMACM_ONE_NS:-}" ] || cns=$p-a

# pair NAME TIMEOUT SERVER_CMD CLIENT_CMD: the server in $p-a, given 1.5 s
# to listen, then the client in $cns, each under `timeout TIMEOUT`. Sets
# $rc_s, $rc_c and $ms (both ends, milliseconds); output in $log/NAME.srv
# and .cli. A client that failed leaves its server 2 s before it is
# stopped, so that a failure is quick rather than a wait for the timeout.
pair() {
	local name=$1 to=$2 t0 spid grace
	local -a srv cli
	read -ra srv <<<"$3"
	read -ra cli <<<"$4"
	t0=$(now_ms)
	ur_in "$p-a" timeout "$to" "${srv[@]}" >"$log/$name.srv" 2>&1 &
	spid=$!
	# udaddy's -p is the port space: it listens on 7174
	if [ "${srv[0]}" = udaddy ]; then
		ur_server_up "$p-a" $spid -p 7174
	else
		ur_server_up "$p-a" $spid "${srv[@]}"
	fi
	ur_in "$cns" timeout "$to" "${cli[@]}" >"$log/$name.cli" 2>&1
	rc_c=$?
	grace=$to
	[ "$rc_c" -eq 0 ] || grace=2
	finish "$spid" "$grace"
	rc_s=$?
	ms=$(($(now_ms) - t0))
}

# tails NAME: the last lines of both sides' output
tails() {
	local side f
	for side in client:cli server:srv; do
		f=$log/$1.${side#*:}
		# what looks like the error, even inside a long line (stderr lands
		# in the middle of buffered stdout), then the last lines
		grep -aoiE '.{0,60}(error|fail|cma event|mismatch|unhandled|removal).{0,80}' "$f" |
			grep -v '^ping data' | tail -4 | sed "s/^/  ${side%%:*} (error?): /"
		tail -8 "$f" | cut -c1-200 | sed "s/^/  ${side%%:*}: /"
	done
}

# verdict NAME LABEL WHY [WHAT]: "ok LABEL" with the duration and WHAT, or
# "FAIL LABEL" with WHY and the last lines of NAME's two sides; WHY empty
# means passed
verdict() {
	local name=$1 label=$2 why=$3 what=${4:-}
	if [ -z "$why" ]; then
		ok "$label ($ms ms)${what:+: $what}"
	else
		bad "$label ($ms ms, client exit $rc_c, server exit $rc_s): $why"
		tails "$name"
	fi
}

# exits: empty when both sides exited 0, else what they did
exits() {
	local w=
	[ "$rc_c" -eq 0 ] || w="client exit $rc_c"
	[ "$rc_s" -eq 0 ] || w="${w:+$w, }server exit $rc_s"
	[ "$rc_c" -ne 124 ] && [ "$rc_s" -ne 124 ] || w="$w (124: timed out)"
	echo "$w"
}

# in_order REF OUT: empty when every line of REF appears in OUT in that
# order (other lines may come between), else the first line missing
in_order() {
	awk 'BEGIN { i = n = 0 } NR == FNR { want[n++] = $0; next } i < n && $0 == want[i] { i++ }
		END { if (i < n) print "no \"" want[i] "\" (after " i " of " n " lines as Soft-RoCE printed them)" }' \
		"$1" "$2"
}

check_rping() {
	local P=$((base + 1)) got why
	# -V: the client compares what came back with what it sent
	pair rping 30 "rping -s -a $net.1 -p $P -v -C 100 -S 4096" \
		"rping -c -a $net.1 -p $P -v -V -C 100 -S 4096"
	# "ping data: rdma-ping-N: ..." once per ping, N from 0, in order
	got=$(awk '/^ping data: rdma-ping-/ { split($3, a, "-"); if (a[3] + 0 != n) bad = 1; n++ }
		END { print n + 0, bad + 0 }' "$log/rping.cli")
	why=$(exits)
	if [ -z "$why" ] && [ "$got" != "100 0" ]; then
		why="client printed ${got% *} ping data lines, want 100"
		[ "${got#* }" = 0 ] || why="$why numbered 0..99 in order"
	fi
	verdict rping "rping -v -V -C 100 -S 4096" "$why" \
		"$(grep -c '^ping data:' "$log/rping.cli") pings checked, server echoed $(grep -c '^server ping data:' "$log/rping.srv")"
}

# Two listening programs on one device: the first to open it takes the
# wire's MADs for QP 1 and passes the second's on (provider/rdmacm_route.c);
# a client for each, the second's first, each checks its data
check_twoservers() {
	local P=$((base + 30)) s1 s2 t0 f why=
	ur_in "$p-a" timeout 40 rping -s -a "$net.1" -p "$P" -v -C 20 >"$log/two1.srv" 2>&1 &
	s1=$!
	ur_server_up "$p-a" $s1 -p "$P"
	ur_in "$p-a" timeout 40 rping -s -a "$net.1" -p $((P + 1)) -v -C 20 >"$log/two2.srv" 2>&1 &
	s2=$!
	ur_server_up "$p-a" $s2 -p $((P + 1))
	# the listener's name is a file only the device's users reach
	f=$(ip netns exec "$p-a" ss -Hxl | grep -oE "/[^ ]*/cm-port-[0-9]+-$P( |$)" | head -1 | tr -d ' ')
	if [ -z "$f" ]; then
		why="no socket file for port $P"
	else
		ur_nobody_reaches "$f" dgram
		case $? in
		0) why="an unprivileged user reaches $f" ;;
		1) ;;
		*) why="could not try $f as an unprivileged user" ;;
		esac
	fi
	t0=$(now_ms)
	ur_in "$cns" timeout 20 rping -c -a "$net.1" -p $((P + 1)) -v -V -C 20 >"$log/two2.cli" 2>&1 ||
		why="the second program's client exit $?"
	ur_in "$cns" timeout 20 rping -c -a "$net.1" -p "$P" -v -V -C 20 >"$log/two1.cli" 2>&1 ||
		why="${why:+$why, }the first program's client exit $?"
	ms=$(($(now_ms) - t0))
	finish "$s2" 5 || why="${why:+$why, }the second server exit $?"
	finish "$s1" 5 || why="${why:+$why, }the first server exit $?"
	rc_c=0 rc_s=0
	for f in two1 two2; do
		[ -n "$why" ] || [ "$(grep -c '^ping data:' "$log/$f.cli")" = 20 ] ||
			why="$f: not 20 pings checked"
	done
	cat "$log/two2.cli" "$log/two1.cli" >"$log/twoservers.cli"
	cat "$log/two2.srv" "$log/two1.srv" >"$log/twoservers.srv"
	verdict twoservers "two listening programs on one device, a client each" "$why" \
		"$(grep -c '^ping data:' "$log/two2.cli") and $(grep -c '^ping data:' "$log/two1.cli") pings checked"
}

# A listener killed (SIGKILL) leaves its port's socket file: the next
# program listens on the port at once (it replaces the file), and the
# device's keeper removes one nobody took within a second (its sweep,
# provider/shared.h)
check_killed() {
	local P=$((base + 50)) k d f why=
	d=$(ip netns exec "$p-a" bash -c 'eval "$("$UROCE" env)"; echo "${SYSFS_PATH%/sys}"')/dev/uroce0
	for k in 1 2; do
		ur_in "$p-a" timeout 30 rping -s -a "$net.1" -p $((P + k)) -C 1 >"$log/killed$k.srv" 2>&1 &
		ur_server_up "$p-a" $! -p $((P + k))
		pkill -KILL -xf "rping -s -a $net.1 -p $((P + k)) -C 1"
		wait $! 2>/dev/null
		[ -S "$d/cm-port-262-$((P + k))" ] || why="${why:+$why, }no socket file for port $((P + k))"
	done
	pair killed 30 "rping -s -a $net.1 -p $((P + 1)) -v -C 20" \
		"rping -c -a $net.1 -p $((P + 1)) -v -V -C 20"
	f=$(exits)
	why=${why:+$why${f:+, }}$f
	[ -n "$why" ] || [ "$(grep -c '^ping data:' "$log/killed.cli")" = 20 ] ||
		why="not 20 pings checked"
	f="$d/cm-port-262-$((P + 2))"
	for _ in $(seq 1 30); do
		[ -e "$f" ] || break
		sleep 0.1
	done
	[ ! -e "$f" ] || why="${why:+$why, }$f left 3 s after its program was killed"
	verdict killed "killed listeners: the port taken again at once, the other's file swept" "$why" \
		"$(grep -c '^ping data:' "$log/killed.cli") pings checked"
}

# The device's first program uses no rdma_cm (ibv_rc_pingpong waiting for
# its peer): it still takes the wire's MADs for QP 1, and its provider's CM
# passes a REQ on to the rping server started after it
check_housekeeper() {
	local P=$((base + 40)) hk why=
	ur_in "$p-a" timeout 30 ibv_rc_pingpong -d uroce0 -g 1 -p "$P" >"$log/hk.first" 2>&1 &
	hk=$!
	ur_server_up "$p-a" $hk -p "$P"
	pair housekeeper 30 "rping -s -a $net.1 -p $((P + 1)) -v -C 20" \
		"rping -c -a $net.1 -p $((P + 1)) -v -V -C 20"
	stop "$hk"
	wait "$hk" 2>/dev/null
	why=$(exits)
	[ -n "$why" ] || [ "$(grep -c '^ping data:' "$log/housekeeper.cli")" = 20 ] ||
		why="not 20 pings checked"
	verdict housekeeper "rping to a device whose first program uses no rdma_cm" "$why" \
		"$(grep -c '^ping data:' "$log/housekeeper.cli") pings checked"
}

# reference NAME LABEL SERVER_CMD CLIENT_CMD: both sides print the lines
# Soft-RoCE's run of the program printed (ucmatose, udaddy)
reference() {
	local name=$1 label=$2 why
	pair "$name" 30 "$3" "$4"
	why=$(exits)
	[ -n "$why" ] || why=$(in_order "$ref/rxe-cm-$name.client.txt" "$log/$name.cli")
	[ -n "$why" ] || why=$(in_order "$ref/rxe-cm-$name.server.txt" "$log/$name.srv")
	verdict "$name" "$label" "$why" "$(tail -1 "$log/$name.cli")"
}

check_ucmatose() {
	local P=$((base + 2))
	# the server takes -c/-C too: it waits for -c connections, sends -C messages on each
	reference ucmatose "ucmatose -c 4 -C 20" "ucmatose -b $net.1 -p $P -c 4 -C 20" \
		"ucmatose -s $net.1 -p $P -c 4 -C 20"
}

check_udaddy() {
	# udaddy has no port option (-p is the port space): it uses 7174
	reference udaddy "udaddy -c 4" "udaddy -b $net.1 -c 4" "udaddy -s $net.1 -c 4"
}

check_rdma_server() {
	local P=$((base + 3)) why
	# rdma_server listens on the wildcard address by default
	pair rdma_server 30 "rdma_server -p $P" "rdma_client -s $net.1 -p $P"
	why=$(exits)
	[ -n "$why" ] || grep -qx 'rdma_client: end 0' "$log/rdma_server.cli" || why="no \"rdma_client: end 0\""
	[ -n "$why" ] || grep -qx 'rdma_server: end 0' "$log/rdma_server.srv" || why="no \"rdma_server: end 0\""
	verdict rdma_server "rdma_server/rdma_client" "$why"
}

# perftest_specs SPEC...: each perftest with -R, as Soft-RoCE ran them
check_perftest() { perftest_specs "ib_write_bw" "ib_read_bw" "ib_send_bw"; }
# UD over rdma_cm crashes perftest's client now and then (about 1 run in 6;
# docs/rdma-cm.md), so the suite leaves it out
check_perftest_ud() { perftest_specs "ib_send_bw -c UD"; }

perftest_specs() {
	local P=$((base + 4)) spec name why line
	local bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
	[ "$1" = "ib_send_bw -c UD" ] && P=$((P + 3))
	for spec in "$@"; do
		P=$((P + 1))
		name=perftest-$P
		pair "$name" 30 "$spec -d uroce0 -R -p $P" "$spec -d uroce0 -R -p $P $net.1"
		# perftest finished but could not calibrate its cycle counter
		# against the clock to report (a busy machine): once more
		if [ "$rc_s" = 0 ] && ur_perftest_unreported "$log/$name.cli"; then
			echo "note $name: perftest could not calibrate its cycle counter; once more"
			pair "$name" 30 "$spec -d uroce0 -R -p $P" "$spec -d uroce0 -R -p $P $net.1"
		fi
		why=$(exits)
		[ -n "$why" ] || grep -Eq "$bw_re" "$log/$name.cli" || why="no result line"
		# the lines that say rdma_cm connected the QPs, as in Soft-RoCE's run
		for line in ' rdma_cm QPs	 : ON' ' Data ex. method : rdma_cm'; do
			[ -n "$why" ] || grep -qxF "$line" "$log/$name.cli" || why="no \"$line\""
		done
		verdict "$name" "$spec -R" "$why" "$(grep -E "$bw_re" "$log/$name.cli" | tail -1 | tr -s ' \t' ' ' | sed 's/^ //')"
	done
}

# rstream and riostream: the default series (64 B to 1 MiB, latency then
# bandwidth, 100k round trips at 64 B: 7 s over kernel TCP here with -T s;
# over uroce 8-72 s for rstream and 43 s or more for riostream, on 2 cores
# idle to busy); -T v checks every byte. RDMACM_RSOCKETS="-S 16384 -C 1000"
# runs each program's one custom test instead (the suite's, for time).
check_rstream() {
	local P=$((base + 10)) prog why args res
	for prog in rstream riostream; do
		P=$((P + 1))
		args="${RDMACM_RSOCKETS:-} -T v"
		pair "$prog" 90 "$prog -p $P $args" "$prog -s $net.1 -p $P $args"
		why=$(exits)
		res=$(grep -E '^([0-9]+[kmg]?_(lat|bw)|custom) ' "$log/$prog.cli")
		[ -n "$why" ] || [ -n "$res" ] || why="no result line"
		verdict "$prog" "$prog ${args# }" "$why" \
			"$(grep -c . <<<"$res") results, last: $(tail -1 <<<"$res" | tr -s ' ' ' ')"
	done
}

# qperf's RC tests over rdma_cm (-cm1); its UD tests never use the CM
# ("-cm1 set but not used in test ud_lat") and give an address handle without
# a GRH, which a RoCE device refuses (EINVAL, as Soft-RoCE does): ud_lat is
# run apart and printed, not counted
check_qperf() {
	local spid t0 why res test line rc_ud tests="rc_bw rc_lat rc_rdma_read_bw"
	t0=$(now_ms)
	# the server listens on TCP 19765 until it is stopped
	ur_in "$p-a" timeout 120 qperf >"$log/qperf.srv" 2>&1 &
	spid=$!
	ur_server_up "$p-a" $spid -p 19765
	# shellcheck disable=SC2086 # one word per test
	ur_in "$cns" timeout 60 qperf -cm1 -t 2 "$net.1" $tests >"$log/qperf.cli" 2>&1
	rc_c=$?
	ms=$(($(now_ms) - t0))
	ur_in "$cns" timeout 30 qperf -cm1 -t 2 "$net.1" ud_lat >"$log/qperf_ud.cli" 2>&1
	rc_ud=$?
	if running "$spid"; then
		rc_s=0
		stop "$spid"
		wait "$spid" 2>/dev/null
	else
		wait "$spid"
		rc_s=$?
	fi
	why=
	[ "$rc_c" -eq 0 ] || why="client exit $rc_c"
	[ "$rc_s" -eq 0 ] || why="${why:+$why, }the server did not stay up (exit $rc_s)"
	res=
	for test in $tests; do
		# "TEST:" then "    bw  =  1.2 GB/sec" or "    latency  =  9 us"
		line=$(awk -v t="$test:" '$0 == t { getline; if ($0 ~ /= +[0-9.]+ /) print; exit }' "$log/qperf.cli")
		if [ -z "$line" ]; then
			why="${why:+$why; }no result for $test"
		else
			res="$res $test$(tr -s ' ' ' ' <<<"$line")"
		fi
	done
	verdict qperf "qperf -cm1 -t 2 $tests" "$why" "${res# }"
	echo "note qperf -cm1 -t 2 ud_lat (not counted: qperf's UD uses no CM), exit $rc_ud:" \
		"$(grep -v '^ud_lat:$' "$log/qperf_ud.cli" | tr -s '\n ' '  ')"
}

check_fabric() {
	local P=$((base + 20)) spec prov ep size n name why us
	for spec in "verbs msg 64 2000" "verbs msg 65536 200" "verbs;ofi_rxm rdm 64 2000" \
		"verbs;ofi_rxm rdm 65536 200"; do
		read -r prov ep size n <<<"$spec"
		P=$((P + 1))
		name=fabric-$P
		# as test/net/libfabric.sh: -B/-P name its TCP control port (not the
		# endpoint's, which the provider binds), data checked (-c)
		pair "$name" 30 "fi_pingpong -p $prov -e $ep -B $P -S $size -I $n -c" \
			"fi_pingpong -p $prov -e $ep -P $P -S $size -I $n -c $net.1"
		# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
		us=$(awk 'NR > 1 && $3 ~ /^=/ { print $7 }' "$log/$name.cli" | tail -1)
		why=$(exits)
		[ -n "$why" ] || [ -n "$us" ] || why="no result line"
		verdict "$name" "fi_pingpong -p \"$prov\" -e $ep -S $size -I $n -c" "$why" "$us us per transfer"
	done
}

# a client alone against PORT at ADDR, for TIMEOUT seconds (30); sets $rc_c, $ms
lone_client() {
	local name=$1 addr=$2 P=$3 to=${4:-30} t0
	t0=$(now_ms)
	ur_in "$cns" timeout "$to" rping -c -a "$addr" -p "$P" -v -C 1 >"$log/$name.cli" 2>&1
	rc_c=$?
	ms=$(($(now_ms) - t0))
	: >"$log/$name.srv"
	rc_s=0
}

check_reject() {
	local P=$((base + 30)) spid ev why want='cma event RDMA_CM_EVENT_REJECTED, error 8'
	# a uroce program in $p-a that listens, but on another port
	ur_in "$p-a" timeout 60 rping -s -a "$net.1" -p "$P" -C 1 >"$log/reject.listener" 2>&1 &
	spid=$!
	ur_server_up "$p-a" $spid -p "$P"
	lone_client reject "$net.1" $((P + 1))
	cp "$log/reject.listener" "$log/reject.srv"
	if running "$spid"; then
		stop "$spid"
		wait "$spid" 2>/dev/null
	else
		wait "$spid"
		rc_s=$?
	fi
	ev=$(grep -m1 '^cma event' "$log/reject.cli")
	why=
	if [ "$rc_s" -ne 0 ]; then
		why="the listener on port $P did not stay up (exit $rc_s)"
	elif [ "$rc_c" -eq 0 ] || [ "$rc_c" -eq 124 ]; then
		why="client exit $rc_c, want an error"
	elif [ "$ev" != "$want" ]; then
		why="got \"${ev:-no event}\", want \"$want\" (Soft-RoCE)"
	elif [ "$ms" -ge 2000 ]; then
		why="took $ms ms, want under 2000"
	fi
	verdict reject "reject: port nobody listens on, another port listened on" "$why" "$ev, exit $rc_c"

	# the same with no program at all in $p-a but the device's keeper
	# (tools/uroce_keeper.c, started by link add): Soft-RoCE's kernel
	# answers REJ 8 (test/data/cm/rxe-cm-reject.*), and so must we. With
	# one namespace the client itself is in $p-a.
	[ "$cns" = "$p-b" ] || return 0
	lone_client reject_idle "$net.1" $((P + 2)) 5
	ev=$(grep -m1 '^cma event' "$log/reject_idle.cli")
	why=
	if [ "$ev" != "$want" ]; then
		why="got \"${ev:-no event}\" (exit $rc_c; 124: no answer in 5 s), want \"$want\""
	elif [ "$ms" -ge 2000 ]; then
		why="took $ms ms, want under 2000"
	fi
	verdict reject_idle "reject: no program on the server's device, only its keeper" "$why" \
		"$ev, exit $rc_c"
}

check_unreachable() {
	local P=$((base + 40)) ev why
	# $net.3 is nobody: ARP fails, so the address never resolves
	lone_client unreachable "$net.3" "$P"
	ev=$(grep -m1 -E '^cma event RDMA_CM_EVENT_(ADDR_ERROR|ROUTE_ERROR|UNREACHABLE|CONNECT_ERROR), error' \
		"$log/unreachable.cli")
	why=
	if [ "$rc_c" -eq 124 ]; then
		why="still waiting after 30 s"
	elif [ "$rc_c" -eq 0 ]; then
		why="client exit 0, want an error"
	elif [ -z "$ev" ]; then
		why="no ADDR_ERROR, ROUTE_ERROR, UNREACHABLE or CONNECT_ERROR event"
	fi
	verdict unreachable "unreachable: $net.3, no host" "$why" "$ev, exit $rc_c"
}

echo "== librdmacm programs over uroce, servers in $p-a ($net.1), clients in $cns"
want rping && check_rping
want ucmatose && check_ucmatose
want udaddy && check_udaddy
want rdma_server && check_rdma_server
want perftest && check_perftest
want perftest_ud && check_perftest_ud
want rstream && check_rstream
want qperf && check_qperf
want fabric && check_fabric
want twoservers && check_twoservers
want housekeeper && check_housekeeper
want killed && check_killed
want reject && check_reject
want unreachable && check_unreachable

if [ "$fails" -eq 0 ]; then echo "all passed"; else echo "$fails failed"; fi
exit $((fails > 0))
