# shellcheck shell=bash disable=SC2034,SC2154
# tools/bench --qps, sourced: cost against QP count. ib_write_bw -s 65536
# -q N between the two processes (aggregate rate, the client's peak RSS and
# CPU time per GB), and qp_mem: how many RC QPs one process can create and
# connect with the stock libibverbs, and what each costs in memory.
# perftest's latency tests refuse -q > 1 ("Multiple QPs only available on bw
# tests"), so latency against QP count is not measured here.
# Needs bench_lib.sh, CEIL[], dur, BL_LOG.

QP_COUNTS="1 10 100 1000"
QP_MEM_N=10000

# qps_measure WIRE P NET
qps_measure() {
	local wire=$1 p=$2 net=$3 n name mbps srv cli line rc
	for n in $QP_COUNTS; do
		name="q$n-$wire"
		echo "-- $wire: ib_write_bw -s 65536 -D $dur -q $n" >&2
		bl_perftest "$name" "$p-a" "$p-b" "$net.1" 0 300 ib_write_bw -d uroce0 -x 1 -s 65536 -D "$dur" -q "$n"
		if [ "$BL_OK" = 1 ]; then
			mbps=$(bl_results "$BL_LOG/$name" | tail -1 | awk '{print $4}')
			read -r srv cli _ <<<"$(bl_window "$name" "$dur")"
		else
			mbps=nan srv=nan cli=nan
		fi
		echo "$wire $n $mbps $BL_RSS_MAX $srv $cli" >>"$BL_LOG/qp.txt"
		echo "   $mbps MiB/s, client peak RSS $((BL_RSS_MAX / 1048576)) MiB" >&2
	done
	echo "-- $wire: qp_mem, $QP_MEM_N RC QPs to RTS in one process" >&2
	rc=0 holder=
	if [ "$wire" = memif ]; then
		# a memif client needs its server process: one that opens the
		# device on the other side and waits (for a peer that never comes)
		ur_in "$p-a" timeout 120 ibv_rc_pingpong -d uroce0 -g 1 -p 18931 >/dev/null 2>&1 &
		holder=$!
		sleep 1
	fi
	line=$(ur_in "$p-b" build/test/qp_mem -d uroce0 -n $QP_MEM_N -c "$net.1" 2>"$BL_LOG/qp_mem-$wire.err") || rc=$?
	if [ -n "$holder" ]; then
		ip netns pids "$p-a" | xargs -r kill 2>/dev/null
		wait "$holder" 2>/dev/null || true
	fi
	echo "$line" >"$BL_LOG/qp_mem-$wire"
	if [ $rc != 0 ]; then
		bl_fail "qp_mem $QP_MEM_N QPs on $wire: exit status $rc: $(echo "$line" | grep -o 'created=[0-9]*') $(echo "$line" | grep -o 'first_error=.*')" \
			"build/test/qp_mem -d uroce0 -n $QP_MEM_N -c $net.1" "$BL_LOG/qp_mem-$wire.err"
	fi
	echo "$wire $line" >>"$BL_LOG/qp_mem.txt"
	echo "   $line" >&2
	return 0
}

# qps_report OUT: CSVs, table, PNG
qps_report() {
	local out=$1 csv=$1/qps.csv mcsv=$1/qp_mem.csv pd=$BL_LOG/plot w cg
	mkdir -p "$pd"
	touch "$BL_LOG/qp.txt" "$BL_LOG/qp_mem.txt"
	echo "wire,qps,gbps,ratio_to_1qp,ceiling_gbps,client_peak_rss_mib,rss_per_added_qp_kib,cpu_s_per_gb,target_cpu_pct,initiator_cpu_pct" >"$csv"
	for w in af_packet memif; do
		read -r cg _ <<<"$(bl_ceiling_goodput write 65536 "${CEIL[$w]:-}")"
		awk -v w="$w" -v cg="$cg" '$1 == w {
			g = $3 == "nan" ? "nan" : $3 * 8 * 1048576 / 1e9
			if ($2 == 1) {g1 = g; r1 = $4}
			ratio = (g != "nan" && g1 > 0) ? sprintf("%.3f", g / g1) : "nan"
			per = ($2 > 1 && r1 > 0) ? sprintf("%.1f", ($4 - r1) / ($2 - 1) / 1024) : "-"
			cpu = (g != "nan" && g > 0 && $5 != "nan") ? sprintf("%.3f", ($5 + $6) / (g / 8)) : "nan"
			printf "%s,%d,%s,%s,%s,%.1f,%s,%s,%s,%s\n", w, $2, g == "nan" ? g : sprintf("%.3f", g),
				ratio, cg, $4 / 1048576, per, cpu,
				$5 == "nan" ? "nan" : sprintf("%.1f", $5 * 100), $6 == "nan" ? "nan" : sprintf("%.1f", $6 * 100)
		}' "$BL_LOG/qp.txt" >>"$csv"
		awk -F, -v w="$w" '$1 == w {print $2, $3}' "$csv" >"$pd/$w-qps.dat"
		awk -F, -v w="$w" '$1 == w {print $2, $6}' "$csv" >"$pd/$w-qps-rss.dat"
		awk -F, -v w="$w" '$1 == w {print $2, $8}' "$csv" >"$pd/$w-qps-cpu.dat"
		echo "$cg" >"$pd/$w-qps-ceil"
	done
	echo
	echo "Throughput against QP count: ib_write_bw -s 65536 -D $dur -q N, aggregate"
	echo "(ceiling: raw frame rate at ${FRAME_4K:-4154}-byte frames as WRITE goodput; RSS per added QP ="
	echo " (peak RSS at N - peak RSS at 1) / (N - 1), perftest's own per-QP buffers included)"
	awk -F, 'NR == 1 {printf "%-10s %5s %9s %8s %9s %10s %12s %10s %8s %8s\n", "wire", "QPs", "Gb/s", "vs 1 QP",
			"ceiling", "RSS MiB", "KiB/added QP", "CPU s/GB", "target%", "init%"; next}
		{printf "%-10s %5s %9s %8s %9s %10s %12s %10s %8s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}' "$csv"
	echo "CSV: $csv"
	echo "latency against QP count: not measured (perftest: \"Multiple QPs only available on bw tests\")"
	echo
	echo "wire,wanted,created,moved,state,rss_per_qp_b,data_per_qp_b,create_us_per_qp,modify_us_per_qp,destroy_us_per_qp,first_error" >"$mcsv"
	awk '{w = $1; delete kv; err = ""
		for (i = 2; i <= NF; i++) {split($i, a, "="); kv[a[1]] = a[2]}
		if (match($0, /first_error="[^"]*"/)) err = substr($0, RSTART + 13, RLENGTH - 14)
		printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,\"%s\"\n", w, kv["wanted"], kv["created"], kv["moved"],
			kv["state"], kv["rss_per_qp_b"], kv["data_per_qp_b"], kv["create_us_per_qp"],
			kv["modify_us_per_qp"], kv["destroy_us_per_qp"], err}' "$BL_LOG/qp_mem.txt" >>"$mcsv"
	echo "QPs in one process (qp_mem: RC QPs, 128 send and 128 receive WRs, INIT -> RTR -> RTS, no traffic)"
	awk -F, 'NR == 1 {printf "%-10s %7s %8s %6s %11s %12s %10s %10s  %s\n", "wire", "wanted", "created",
			"in RTS", "RSS B/QP", "alloc B/QP", "create us", "modify us", "first error"; next}
		{printf "%-10s %7s %8s %6s %11s %12s %10s %10s  %s\n", $1, $2, $3, $4, $6, $7, $8, $9, $11}' "$mcsv"
	echo "CSV: $mcsv"
	qps_plot "$out"
}

qps_plot() {
	local out=$1 pd=$BL_LOG/plot w c
	{
		echo "set terminal pngcairo size 1500,480 font ',10'"
		echo "set output '$out/qps.png'"
		echo "set multiplot layout 1,3 title 'uroce against QP count: ib_write_bw -s 65536 -q N, aggregate'"
		echo "set logscale x 10; set grid; set key left bottom; set xlabel 'QPs'; set xrange [0.7:1500]"
		echo "set title 'throughput (raw ceiling dashed, 80% of 1 QP dotted)'; set ylabel 'payload Gb/s'; set yrange [0:*]"
		local cmd="plot"
		c=1
		for w in af_packet memif; do
			if [ -s "$pd/$w-qps.dat" ]; then
				local g1
				g1=$(awk '$1 == 1 && $2 != "nan" {print $2 * 0.8}' "$pd/$w-qps.dat")
				cmd+=" '$pd/$w-qps.dat' using 1:2 with linespoints lc $c pt 7 title '$w',"
				[ "$(cat "$pd/$w-qps-ceil")" != nan ] && cmd+=" $(cat "$pd/$w-qps-ceil") with lines lc $c dt 2 notitle,"
				[ -n "$g1" ] && cmd+=" $g1 with lines lc $c dt 3 notitle,"
			fi
			c=$((c + 1))
		done
		[ "$cmd" = plot ] && cmd="plot 1/0 notitle,"
		echo "${cmd%,}"
		echo "set title 'client peak RSS'; set ylabel 'MiB'; set key left top"
		cmd="plot"
		c=1
		for w in af_packet memif; do
			[ -s "$pd/$w-qps-rss.dat" ] && cmd+=" '$pd/$w-qps-rss.dat' using 1:2 with linespoints lc $c pt 7 title '$w',"
			c=$((c + 1))
		done
		[ "$cmd" = plot ] && cmd="plot 1/0 notitle,"
		echo "${cmd%,}"
		echo "set title 'CPU time per GB moved, both processes'; set ylabel 'CPU s/GB'"
		cmd="plot"
		c=1
		for w in af_packet memif; do
			[ -s "$pd/$w-qps-cpu.dat" ] && cmd+=" '$pd/$w-qps-cpu.dat' using 1:2 with linespoints lc $c pt 7 title '$w',"
			c=$((c + 1))
		done
		[ "$cmd" = plot ] && cmd="plot 1/0 notitle,"
		echo "${cmd%,}"
		echo "unset multiplot"
	} >"$BL_LOG/qps.gp"
	if gnuplot "$BL_LOG/qps.gp" 2>"$BL_LOG/qps.gp.err"; then
		echo "plot: $out/qps.png"
	else
		bl_fail "gnuplot (qps)" "gnuplot $BL_LOG/qps.gp" "$BL_LOG/qps.gp.err"
	fi
}
