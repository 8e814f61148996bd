#!/bin/bash
# Faults between two namespaces, each with a uroce device on one end of a
# veth pair, with stock-libibverbs programs only (build/test/verbs_faults
# and build/test/soak):
#   limits, counts, busy  limits as advertised; objects in use not destroyed
#   errreset, asyncflood  QPs through ERR and RESET reused; unread events
#   keyguess              rkeys guessed by index are refused
#   retryexc              RETRY_EXC_ERR raises no async event (rxe, mlx5)
#   conform               comp_vector range, phys_port_cnt_ex, create_flags
#                         0, ibv_import_device answers EOPNOTSUPP
#   refusal-reasons       with UROCE_DEBUG=1 a refused call logs the
#                         attribute behind it (conform's and limits' calls)
#   cycles                thousands of create/destroy rounds without a leak
#   killpeer              the server is killed (SIGKILL) under mixed traffic:
#                         RETRY_EXC_ERR then flushes within (retry+1) x
#                         timeout, then new QPs against a restarted server
#   linkflap              the veth goes down for less than the QPs' timeout
#                         twice: the transfer carries on, every byte right
#   linkdown              the veth stays down longer: RETRY_EXC_ERR then
#                         flushes in time; link up, new QPs work again
#   hw_counters           every counter file exists after link add, at 0 but
#                         the port's count of the link's own first frames
#   kill9                 both processes killed without any cleanup: no
#                         lock, file or block is left that hurts the next run;
#                         after uroce stat the files hold its totals
#                         (af_packet, then memif with its socket file)
#   faults.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u

build=${1:?usage: faults.sh BUILD_DIR}
UROCE=$build/tools/uroce
export UROCE
vf=$build/test/verbs_faults
soak=$build/test/soak

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }
for f in "$UROCE" "$vf" "$soak"; do
	[ -x "$f" ] || { echo "FAIL: $f is missing (build first)"; exit 1; }
done
# shellcheck source=../../tools/netns.sh
source "$(dirname "$0")/../../tools/netns.sh"

# our own names (ft*, 10.63.2.0/24): nothing else's namespaces are touched
P=ft$(($$ % 100000))
NET=10.63.2
port=$((20000 + RANDOM % 20000))
log=$(mktemp -d /tmp/uroce-faults.XXXXXX)
fails=0
children=()

# shellcheck disable=SC2317 # invoked by the traps
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in "${children[@]}"; do
		kill -9 "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	ur_pair_down "$P"
	if [ "${keep_log:-0}" = 1 ]; then
		echo "logs kept in $log"
	else
		rm -rf "$log"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
stamp() { # FILE: the time since boot, written whole (the client may be reading)
	local up
	read -r up _ </proc/uptime
	echo "$up" >"$1.tmp" && mv "$1.tmp" "$1"
}

result() { # NAME RC T0 LOGS...: report one check
	local name=$1 rc=$2 t0=$3
	shift 3
	if [ "$rc" -eq 0 ]; then
		echo "ok   $name ($(since "$t0") s)"
		grep -hE "^(hw_counters|limits|counts|busy|errreset|asyncflood|keyguess|conform|retryexc|cycles):|expected failure|after the reconnect|link down for" \
			"$@" 2>/dev/null | grep -v ": PASS$" | sed 's/^/     /' | tail -6
		grep -h "ops (" "$@" 2>/dev/null | tail -1 | sed 's/^soak client: */     soak: /' 
	else
		echo "FAIL $name (exit $rc, $(since "$t0") s)"
		for f in "$@"; do
			[ -s "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -25
		done
		fails=$((fails + 1))
		keep_log=1
	fi
}

# "${in_a[@]}" CMD...: CMD in namespace a with its uroce environment. ip and
# env exec, so $! of a backgrounded one is the pid of CMD itself.
in_a=()
in_b=()
ns_cmds() {
	local env_a env_b
	mapfile -t env_a < <(ip netns exec "$P-a" "$UROCE" env | sed -n 's/^export //p')
	mapfile -t env_b < <(ip netns exec "$P-b" "$UROCE" env | sed -n 's/^export //p')
	in_a=(ip netns exec "$P-a" env "${env_a[@]}")
	in_b=(ip netns exec "$P-b" env "${env_b[@]}")
}

# vf NAME ARGS...: one verbs_faults check in namespace a
vf() {
	local name=$1 t0 rc
	shift
	t0=$(now)
	timeout -s KILL 300 "${in_a[@]}" "$vf" "$@" >"$log/$name" 2>&1
	rc=$?
	result "$name" $rc "$t0" "$log/$name"
}

# server NAME [ARGS...]: a soak server in a, in the background ($srv)
server() {
	local name=$1
	shift
	"${in_a[@]}" "$soak" --server --port "$port" "$@" >"$log/$name" 2>&1 &
	srv=$!
	children+=("$srv")
}

# client NAME ARGS...: a soak client in b, in the background ($cli)
client() {
	local name=$1
	shift
	"${in_b[@]}" "$soak" --client "$NET.1" --port "$port" --report 1 "$@" >"$log/$name" 2>&1 &
	cli=$!
	children+=("$cli")
}

# the soak process itself, not its ip/env/bash wrappers (exec keeps the pid)
soak_pid() { # WRAPPER_PID
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(cat "/proc/$1/comm" 2>/dev/null)" = soak ] && return 0
		sleep 0.05
	done
	return 1
}

wait_for() { # FILE PATTERN SECONDS
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

rundir() { # NS: the namespace's uroce run directory
	ip netns exec "$1" "$UROCE" env | sed -n 's|^export SYSFS_PATH=\(.*\)/sys$|\1|p'
}

hwdir() { # NS: the device's hw_counters directory
	echo "$(rundir "$1")/sys/class/infiniband/uroce0/ports/1/hw_counters"
}

# files_vs_stat NS: every counter `uroce stat -a` shows has its hw_counters
# file, holding the same total (reasons for a mismatch on stdout). A frame
# that arrives between reading the one and the other (the link's own ND and
# MLD come up to a second after link add) is not a mismatch: three tries,
# over the keeper's half-second rewrite.
files_vs_stat() {
	local try out
	for try in 1 2 3; do
		out=$(stat_vs_files "$1") && return 0
		[ $try = 3 ] || sleep 0.6
	done
	echo "$out"
	return 1
}

stat_vs_files() {
	awk -v ns="$1" '
		FNR == NR { if (FNR > 2) { want[$1] = $2; n++ } next }
		{ k = split(FILENAME, p, "/"); got[p[k]] = $0; files++ }
		END {
			for (c in want)
				if (!(c in got) || got[c] != want[c]) {
					printf "%s: %s: file %s, uroce stat %s\n", ns, c,
						(c in got) ? got[c] : "missing", want[c]
					bad++
				}
			if (files != n) { printf "%s: %d files, %d counters\n", ns, files, n; bad++ }
			exit !(n > 0 && !bad)
		}' <(ip netns exec "$1" "$UROCE" stat uroce0 -a) "$(hwdir "$1")"/*
}

echo "== faults: namespaces $P-a/$P-b, veth MTU 9000, $NET.0/24, TCP port $port"
if ! ur_pair_up "$P" "$NET" 9000 >"$log/setup" 2>&1; then
	echo "FAIL: setting up the namespaces and devices"
	cat "$log/setup"
	keep_log=1
	exit 1
fi
ns_cmds

# ---- hw_counters: every file there and 0 right after `uroce link add` ----
# The device's keeper holds it open from link add on (30 ms to open since
# programs start no DPDK), so its port may already have counted the
# link's own first frames (the kernel's ARP, ND, MLD: $first_frames); every
# other counter must be 0, and no file may be missing.
# the port's counters of frames that come and go in any link's first moments
# and how long they waited in its ring, with the passes that took them
first_frames='dp_(rx_frames|rx_arp|rx_nd|rx_not_for_us|rx_other|tx_frames|neigh_requests|neigh_replies|rx_waited_10ms|rx_waited_50ms|late_passes|late_backlog_passes):'
t0=$(now)
rc=0
for s in a b; do
	# as link add left them (uroce stat would make any that were missing)
	made=$(cd "$(hwdir "$P-$s")" && grep -H . -- * | sort)
	files_vs_stat "$P-$s" >>"$log/hw_counters" || rc=1
	if [ "$(cut -d: -f1 <<<"$made")" != "$(cd "$(hwdir "$P-$s")" && ls -- * | sort)" ]; then
		echo "$P-$s: link add did not make every counter file (uroce stat had to)" >>"$log/hw_counters"
		rc=1
	fi
	if grep -vE "^$first_frames" <<<"$made" | grep -qv ':0$'; then
		echo "$P-$s: a counter is not 0 on a new device: $(grep -vE "^$first_frames" <<<"$made" | grep -v ':0$' | tr '\n' ' ')" >>"$log/hw_counters"
		rc=1
	fi
done
echo "hw_counters: $(find "$(hwdir "$P-a")" -type f | wc -l) files after link add, all 0 but the first frames': $(cd "$(hwdir "$P-a")" && grep -H . dp_* | grep -v ':0$' | tr '\n' ' ')" >>"$log/hw_counters"
result hw_counters $rc "$t0" "$log/hw_counters"

# ---- one process: limits, lifetimes, reuse, keys, leaks ----
vf limits limits
UROCE_LIMITS=qp=64,mr=64,cq=32,pd=32,srq=16,ah=16 vf counts counts
vf busy busy
vf errreset errreset 30
vf asyncflood asyncflood 300
vf keyguess keyguess
vf retryexc retryexc
UROCE_DEBUG=1 vf conform conform
# UROCE_DEBUG=1 says why each refused call was refused, naming the attribute
t0=$(now)
rc=0
for why in 'create_cq refused, EINVAL .*comp_vector 100 is not below the context.s num_comp_vectors [0-9]*' \
	'modify_qp refused, EINVAL .*attribute mask lacks IBV_QP_PORT, required for RESET -> INIT' \
	'modify_qp (IBV_QP_AV) refused, EINVAL .*without a GRH' \
	'create_qp refused, EOPNOTSUPP .*create_flags 0x200'; do
	grep -q "$why" "$log/conform" || { echo "no debug line matching: $why" >>"$log/conform.why"; rc=1; }
done
UROCE_DEBUG=1 vf limits-debug limits
grep -q 'modify_qp refused, EINVAL .*max_dest_rd_atomic [0-9]* is above the device.s max_qp_rd_atom [0-9]*' \
	"$log/limits-debug" || { echo "no debug line naming max_dest_rd_atomic" >>"$log/conform.why"; rc=1; }
result refusal-reasons $rc "$t0" "$log/conform.why"
vf cycles --run-dir "$(rundir "$P-a")" cycles 3000

# Timeouts: this 2-CPU machine, shared, can starve a process for tens of
# milliseconds, so the QPs' budgets are a few hundred ms, the margins larger.

# ---- killpeer: SIGKILL to the server under mixed traffic ----
# timeout 15 (134 ms) x (3 + 1) tries: the error is due 537 ms after the kill
t0=$(now)
server killpeer.srv
client killpeer.cli --qps 4 --depth 8 --seconds 60 --timeout 15 --retry 3 --expect-fail \
	--stamp-file "$log/kill_stamp" --margin-ms 1000 --reconnect 3
rc=0
if wait_for "$log/killpeer.cli" "ops (" 30 && soak_pid "$srv"; then
	sleep 0.5
	kill -9 "$srv"
	stamp "$log/kill_stamp"
	wait "$srv" 2>/dev/null
	server killpeer.srv2
	wait "$cli" || rc=$?
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
else
	echo "no traffic within 30 s" >>"$log/killpeer.cli"
	rc=1
	kill -9 "$srv" "$cli" 2>/dev/null
	wait 2>/dev/null
fi
result killpeer $rc "$t0" "$log/killpeer.cli" "$log/killpeer.srv" "$log/killpeer.srv2"

# ---- linkflap: down twice, each time well inside 8 x 268 ms ----
# (`ip link set` itself takes up to a few hundred ms here: the outage is
# measured from before the down to after the up, and must stay under 1.5 s)
t0=$(now)
server linkflap.srv
client linkflap.cli --qps 4 --depth 8 --seconds 8 --timeout 16 --retry 7
rc=0
if wait_for "$log/linkflap.cli" "ops (" 30; then
	for _ in 1 2; do
		sleep 1.5
		d0=$(now)
		ip -n "$P-a" link set "${P}a0" down
		sleep 0.1
		ip -n "$P-a" link set "${P}a0" up
		echo "link down for $(since "$d0") s" >>"$log/linkflap.cli"
	done
	wait "$cli" || rc=$?
	wait "$srv" || rc=$((rc ? rc : 1))
	if awk '/link down for/ && $4 > 1.5 { bad = 1 } END { exit !bad }' "$log/linkflap.cli"; then
		echo "(an outage lasted longer than 1.5 s: the machine is too slow for this check)" \
			>>"$log/linkflap.cli"
	fi
else
	rc=1
	kill -9 "$srv" "$cli" 2>/dev/null
	wait 2>/dev/null
fi
result linkflap $rc "$t0" "$log/linkflap.cli" "$log/linkflap.srv"

# ---- linkdown: down for 3 s, far beyond 4 x 134 ms ----
t0=$(now)
server linkdown.srv --forever
client linkdown.cli --qps 4 --depth 8 --seconds 60 --timeout 15 --retry 3 --expect-fail \
	--stamp-file "$log/down_stamp" --margin-ms 1000 --reconnect 3
rc=0
if wait_for "$log/linkdown.cli" "ops (" 30; then
	sleep 0.5
	ip -n "$P-a" link set "${P}a0" down
	stamp "$log/down_stamp"
	wait_for "$log/linkdown.cli" "expected failure" 10
	sleep 1
	ip -n "$P-a" link set "${P}a0" up
	wait "$cli" || rc=$?
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
else
	rc=1
	ip -n "$P-a" link set "${P}a0" up
	kill -9 "$srv" "$cli" 2>/dev/null
	wait 2>/dev/null
fi
result linkdown $rc "$t0" "$log/linkdown.cli" "$log/linkdown.srv"

# ---- kill9: both ends killed without cleanup, then the next run ----
# KILL9_PORTS: the dataplane ports to try (memif needs the peer's socket file)
kill9() { # NAME
	local name=$1 t0 rc=0 before after dir cpid
	t0=$(now)
	dir=$(rundir "$P-a")
	# a first run makes what any run leaves (the device's shared files)
	server "$name.srv0"
	"${in_b[@]}" "$soak" --client "$NET.1" --port "$port" --qps 2 --seconds 1 \
		>"$log/$name.cli0" 2>&1 || rc=1
	wait "$srv" || rc=1
	before=$(cd "$dir" && find . | sort)
	server "$name.srv"
	client "$name.cli" --qps 8 --seconds 60
	if wait_for "$log/$name.cli" "ops (" 30 && soak_pid "$cli" && soak_pid "$srv"; then
		sleep 1
		kill -9 "$srv" "$cli"
		wait "$srv" "$cli" 2>/dev/null
		# what the dead processes held: QP number blocks, the counters writer
		for s in a b; do
			if ! ip netns exec "$P-$s" "$UROCE" stat uroce0 >"$log/$name.stat.$s" 2>&1 ||
				! grep -q "0 process(es) using it now" "$log/$name.stat.$s"; then
				echo "after the kill, in $P-$s: $(head -1 "$log/$name.stat.$s")" >>"$log/$name.cli"
				rc=1
			fi
		done
		# the sockets they bound go with the device keeper's next sweep
		# (every half second, provider/shared.h)
		for _ in $(seq 1 30); do
			after=$(cd "$dir" && find . | sort)
			[ "$before" = "$after" ] && break
			sleep 0.1
		done
		# the killed ones never wrote their last counts: uroce stat does,
		# and then every file holds the total stat shows
		for s in a b; do
			files_vs_stat "$P-$s" >>"$log/$name.cli" || rc=1
		done
		if [ "$before" != "$after" ]; then
			echo "the run directory changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')" \
				>>"$log/$name.cli"
			rc=1
		fi
		# each path on its own: one ls of both failed wherever
		# /dev/hugepages is absent, and so never saw a leftover
		for cpid in $srv $cli; do
			for f in /var/run/dpdk/uroce-"$cpid" /dev/hugepages/uroce-"$cpid"*; do
				if [ -e "$f" ]; then
					echo "DPDK file $f of the killed $cpid left behind" >>"$log/$name.cli"
					rc=1
				fi
			done
		done
		# a killed memif server leaves its socket file: the next run must cope
		case $name in
		*memif*)
			[ -S "/dev/shm/uroce-memif-$P.sock" ] ||
				echo "(no stale memif socket: this run did not test that case)" >>"$log/$name.cli"
			;;
		esac
		# the next run works: new processes, same devices
		server "$name.srv2"
		"${in_b[@]}" "$soak" --client "$NET.1" --port "$port" --qps 8 --seconds 3 \
			>"$log/$name.cli2" 2>&1 || rc=1
		wait "$srv" || rc=1
	else
		rc=1
		kill -9 "$srv" "$cli" 2>/dev/null
		wait 2>/dev/null
	fi
	result "$name" $rc "$t0" "$log/$name.cli" "$log/$name.srv" "$log/$name.cli2" "$log/$name.srv2"
}
kill9 kill9-af_packet
# the same over memif: a server killed leaves its socket file behind
ur_pair_down "$P"
# shellcheck disable=SC2046 # two words: the ports of a and b
if ur_pair_up "$P" "$NET" 9000 $(ur_memif_ports "$P") >"$log/setup.memif" 2>&1; then
	ns_cmds
	kill9 kill9-memif
else
	result kill9-memif 1 "$(now)" "$log/setup.memif"
fi

if [ $fails -eq 0 ]; then
	echo "all passed"
else
	echo "$fails failed"
fi
exit $((fails > 0))
