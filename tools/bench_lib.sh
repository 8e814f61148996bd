# shellcheck shell=bash disable=SC2034,SC2154
# Helpers of tools/bench, sourced: run a stock perftest pair between two
# namespaces while sampling both processes' CPU time and the client's memory
# from /proc, find the window in which traffic flowed, record failures, and
# turn the raw ceiling's packet rates into the goodput a message size could
# have on that wire.
# Needs: UROCE, BL_LOG (scratch dir), BL_FAILS (failure log), tools/netns.sh.

BL_TCK=$(getconf CLK_TCK)
BL_PAGE=$(getconf PAGESIZE)
BL_PORT=18515 # perftest's default TCP port for the handshake

# bl_exec NS CMD...: exec CMD in NS with the uroce environment. Every step
# execs, so when started with `&`, $! is CMD's own PID (that /proc is read by).
bl_exec() {
	local ns=$1
	shift
	exec ip netns exec "$ns" env UROCE="$UROCE" bash -c 'eval "$("$UROCE" env)"; exec "$@"' _ "$@"
}

# bl_counter_file NS NAME: the hw_counters file of uroce0 in NS
bl_counter_file() {
	local sys
	sys=$(ip netns exec "$1" "$UROCE" env | sed -n 's/^export SYSFS_PATH=//p')
	echo "$sys/class/infiniband/uroce0/ports/1/hw_counters/$2"
}

# bl_ticks PID: BL_T = utime+stime in clock ticks (all threads), or -1 once
# reaped. Sets a variable rather than printing: the sampler must not fork.
bl_ticks() {
	local l
	BL_T=-1
	{ read -r l <"/proc/$1/stat"; } 2>/dev/null || return 0
	l=${l##*) }
	# shellcheck disable=SC2086
	set -- $l
	BL_T=$((${12} + ${13}))
}

# bl_alive PID: running (not a zombie, not reaped)
bl_alive() {
	local l
	{ read -r l <"/proc/$1/stat"; } 2>/dev/null || return 1
	l=${l##*) }
	[ "${l:0:1}" != Z ]
}

# bl_listening NS: something listens on perftest's port in NS
bl_listening() { ip netns exec "$1" ss -Hltn "sport = :$BL_PORT" 2>/dev/null | grep -q .; }

# bl_fail WHAT CMD FILES...: say what failed, how, and keep it in BL_FAILS.
# perftest writes errors to unbuffered stderr and the rest to buffered
# stdout, so its error lines come first in a log: show them, then the tail.
bl_fail() {
	local what=$1 cmd=$2 f st
	shift 2
	{
		echo "== $what"
		echo "   command: $cmd"
		for f in "$@"; do
			[ -s "$f" ] || continue
			echo "   ${f##*/}:"
			grep -aiE 'error|fail|unable|couldn|cannot|refuse|only available|scnt=' "$f" |
				head -n 6 | sed 's/^/   ! /' || true
			grep -av '^ *$' "$f" | tail -n 4 | sed 's/^/   | /' || true
			st=$(sed -nE 's/.*Failed status ([0-9]+):.*/\1/p' "$f" | head -1)
			if [ -n "$st" ]; then echo "   (status $st is $(bl_wc_status "$st"))"; fi
		done
	} | tee -a "$BL_FAILS" >&2
	return 0
}

# bl_wc_status N: the name of enum ibv_wc_status N
bl_wc_status() {
	local -a names=(SUCCESS LOC_LEN_ERR LOC_QP_OP_ERR LOC_EEC_OP_ERR LOC_PROT_ERR WR_FLUSH_ERR
		MW_BIND_ERR BAD_RESP_ERR LOC_ACCESS_ERR REM_INV_REQ_ERR REM_ACCESS_ERR REM_OP_ERR
		RETRY_EXC_ERR RNR_RETRY_EXC_ERR LOC_RDD_VIOL_ERR REM_INV_RD_REQ_ERR REM_ABORT_ERR
		INV_EECN_ERR INV_EEC_STATE_ERR FATAL_ERR RESP_TIMEOUT_ERR GENERAL_ERR)
	echo "IBV_WC_${names[$1]:-unknown}"
}

# bl_perftest NAME NS_SRV NS_CLI IP IDLE TIMEOUT CMD ARGS...
# Runs CMD ARGS in NS_SRV and CMD ARGS IP in NS_CLI. If IDLE > 0, first lets
# the server sit IDLE seconds with its device open (waiting for the client)
# and sets BL_IDLE_PCT to its CPU use then. Samples every 0.1 s into
# $BL_LOG/NAME.tl: time_us server_ticks client_ticks server_rx_packets client_rss_bytes.
# Sets BL_OK (1/0) and BL_RSS_MAX (client peak RSS, bytes); results in $BL_LOG/NAME.
# A failed run is recorded and tried once more.
bl_perftest() {
	local name=$1 srv=$2 cli=$3 ip=$4 idle=$5 tmo=$6 try
	shift 6
	for try in 1 2; do
		bl_perftest_once "$name" "$srv" "$cli" "$ip" "$idle" "$tmo" "$@"
		[ "$BL_OK" = 1 ] && return 0
		bl_fail "$name (attempt $try of 2): $BL_WHY" "$* [server in $srv; client in $cli: ... $ip]" \
			"$BL_LOG/$name" "$BL_LOG/$name.srv"
	done
	return 0
}

bl_perftest_once() {
	local name=$1 srv=$2 cli=$3 ip=$4 idle=$5 tmo=$6
	shift 6
	local spid cpid ctr t0 tick0 t1 tick1 rss res st start_us now_us rc_c=0 rc_s=0 i
	BL_OK=0 BL_WHY="" BL_IDLE_PCT=nan BL_RSS_MAX=0
	ctr=$(bl_counter_file "$srv" rx_packets)
	: >"$BL_LOG/$name.tl"
	bl_exec "$srv" "$@" >"$BL_LOG/$name.srv" 2>&1 &
	spid=$!
	for i in $(seq 300); do
		bl_listening "$srv" && break
		bl_alive "$spid" || break
		sleep 0.1
	done
	if ! bl_alive "$spid" || ! bl_listening "$srv"; then
		BL_WHY="server never listened on port $BL_PORT"
		kill -TERM "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		return 0
	fi
	if [ "$idle" != 0 ]; then
		# the device is open (DPDK and the progress thread run) and no QP exists yet
		sleep 0.5
		t0=${EPOCHREALTIME/./}
		bl_ticks "$spid"
		tick0=$BL_T
		sleep "$idle"
		t1=${EPOCHREALTIME/./}
		bl_ticks "$spid"
		tick1=$BL_T
		BL_IDLE_PCT=$(awk -v a="$tick0" -v b="$tick1" -v t="$((t1 - t0))" -v k="$BL_TCK" \
			'BEGIN {printf "%.1f", (b - a) / k / (t / 1e6) * 100}')
	fi
	bl_exec "$cli" "$@" "$ip" >"$BL_LOG/$name" 2>&1 &
	cpid=$!
	start_us=${EPOCHREALTIME/./}
	while :; do
		now_us=${EPOCHREALTIME/./}
		{ read -r res <"$ctr"; } 2>/dev/null || res=0
		rss=0
		{ read -r _ rss _ <"/proc/$cpid/statm"; } 2>/dev/null || true
		rss=$((rss * BL_PAGE))
		[ "$rss" -gt "$BL_RSS_MAX" ] && BL_RSS_MAX=$rss
		bl_ticks "$spid"
		st=$BL_T
		bl_ticks "$cpid"
		echo "$now_us $st $BL_T $res $rss" >>"$BL_LOG/$name.tl"
		bl_alive "$cpid" || break
		if [ $((now_us - start_us)) -gt $((tmo * 1000000)) ]; then
			BL_WHY="client still running after ${tmo}s, killed"
			kill -TERM "$cpid" 2>/dev/null || true
		fi
		sleep 0.1
	done
	wait "$cpid" || rc_c=$?
	# the server ends on its own once the client is done; give it a moment
	for i in $(seq 100); do bl_alive "$spid" || break; sleep 0.1; done
	if bl_alive "$spid"; then
		[ -z "$BL_WHY" ] && BL_WHY="server still running 10 s after the client ended, killed"
		kill -TERM "$spid" 2>/dev/null || true
	fi
	wait "$spid" || rc_s=$?
	if [ -z "$BL_WHY" ] && [ "$rc_c" != 0 ]; then
		BL_WHY="client exit status $rc_c"
	elif [ -z "$BL_WHY" ] && [ "$rc_s" != 0 ]; then
		BL_WHY="server exit status $rc_s"
	fi
	if [ -z "$BL_WHY" ] && ! bl_results "$BL_LOG/$name" | grep -q .; then
		BL_WHY="no result line"
	fi
	[ -z "$BL_WHY" ] && BL_OK=1
	return 0
}

# bl_results FILE: perftest's result lines (size, iterations, numbers...)
bl_results() { grep -aE '^ +[0-9]+ +[0-9]+ +[0-9.]' "$1" 2>/dev/null; }

# bl_window NAME DURATION: the CPU use of server and client, in cores, while
# traffic flowed. Traffic starts when the server's rx_packets counter first
# moves (the counter file is rewritten every 0.5 s); perftest -D then sends
# for DURATION s, so [start + 0.5, start + DURATION - 1.5] is inside it.
# Prints: server_cores client_cores window_seconds
bl_window() {
	awk -v d="$2" -v k="$BL_TCK" '
	{ t[NR] = $1 / 1e6; s[NR] = $2; c[NR] = $3; r[NR] = $4; n = NR }
	function at(v, x,   i) { # v[] at time x, linear between samples
		for (i = 2; i <= n; i++)
			if (t[i] >= x && v[i] >= 0 && v[i - 1] >= 0)
				return v[i - 1] + (v[i] - v[i - 1]) * (x - t[i - 1]) / (t[i] - t[i - 1])
		return v[n]
	}
	END {
		for (i = 2; i <= n; i++) if (r[i] != r[1]) break
		if (i > n) { print "nan nan 0"; exit }
		a = t[i] + 0.5; b = t[i] + d - 1.5
		if (b > t[n]) b = t[n]
		if (b - a < 0.4) { a = t[i]; b = t[n] }
		if (b <= a) { print "nan nan 0"; exit }
		printf "%.3f %.3f %.2f\n", (at(s, b) - at(s, a)) / k / (b - a),
			(at(c, b) - at(c, a)) / k / (b - a), b - a
	}' "$BL_LOG/$1.tl"
}

# ---- the raw ceiling as goodput ----
# Frames of uroce's traffic (no FCS): Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 +
# ICRC 4 around a payload padded to 4 bytes (BTH PadCnt); a WRITE's first
# packet adds a RETH (16), a READ response's first and last (or only) packet
# an AETH (4). Path MTU 4096.
BL_MTU=4096
BL_HDR=58

# bl_ceiling_goodput TEST BYTES POINTS: the payload rate (Gb/s) and message
# rate (per second) TEST (write|read|send) at BYTES could reach if the wire
# moved frames exactly as fast as the raw ceiling moved them one way.
# POINTS: "frame:pps ..." from testpmd; the time a frame of F bytes takes is
# interpolated linearly in F between measured frame sizes (extrapolated past
# the ends along the nearest segment). Also prints the frames per message
# and the wire time of one message (us). Prints: gbps msgs_per_s frames wire_us
bl_ceiling_goodput() {
	awk -v test="$1" -v S="$2" -v pts="$3" -v mtu="$BL_MTU" -v hdr="$BL_HDR" '
	function ftime(F,   i, j) { # seconds per frame of F bytes
		if (np == 1) return 1 / p[1]
		for (i = 1; i < np - 1 && F > f[i + 1]; i++) ;
		j = i + 1
		x = 1 / p[i] + (1 / p[j] - 1 / p[i]) * (F - f[i]) / (f[j] - f[i])
		return x > 0 ? x : 1 / p[1]
	}
	function pad4(x) { return int((x + 3) / 4) * 4 }
	BEGIN {
		m = split(pts, a, " ")
		for (i = 1; i <= m; i++) { split(a[i], b, ":"); if (b[2] > 0) { np++; f[np] = b[1]; p[np] = b[2] } }
		if (!np) { print "nan nan nan nan"; exit }
		for (i = 1; i <= np; i++) for (j = i + 1; j <= np; j++) if (f[j] < f[i]) {
			x = f[i]; f[i] = f[j]; f[j] = x; x = p[i]; p[i] = p[j]; p[j] = x }
		n = S > 0 ? int((S + mtu - 1) / mtu) : 1
		T = 0
		for (k = 1; k <= n; k++) {
			pay = k < n ? mtu : S - (n - 1) * mtu
			F = hdr + pad4(pay)
			if (test == "write" && k == 1) F += 16
			if (test == "read" && (k == 1 || k == n)) F += 4
			if (F < 60) F = 60 # the Ethernet minimum
			T += ftime(F)
		}
		printf "%.4f %.0f %d %.3f\n", S * 8 / T / 1e9, 1 / T, n, T * 1e6
	}'
}
