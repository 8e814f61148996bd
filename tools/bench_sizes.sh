# shellcheck shell=bash disable=SC2034,SC2154
# tools/bench --sizes, sourced: cost against message size, 2 B to 1 MiB.
# Throughput: ib_write_bw, ib_read_bw, ib_send_bw -a -n N (one run does
# every power of 2; perftest's -a goes on to 8 MiB and cannot stop earlier),
# each size beside the goodput the raw ceiling would allow at that size's
# frames. Latency: ib_write_lat and ib_send_lat per size (powers of 4 and
# 1 MiB), beside kernel TCP request/response of the same size (halved, as
# perftest reports half a round trip) and the wire time of one message at
# the raw ceiling. Needs bench_lib.sh, CEIL[], iters, dur, BL_LOG.

SZ_SIZES="2 8 32 128 512 2048 8192 32768 131072 524288 1048576"

# iterations for a latency run at SIZE: enough for a p99 at small sizes,
# about 256 MiB each way at large ones
sz_lat_iters() { awk -v s="$1" 'BEGIN {n = int(268435456 / s); print (n < 200 ? 200 : (n > 5000 ? 5000 : n))}'; }

# sizes_tcp P NET: kernel TCP request/response of every size over the veth
sizes_tcp() {
	local p=$1 net=$2 s n line port=5310
	echo "-- kernel TCP request/response over the veth, $SZ_SIZES bytes" >&2
	: >"$BL_LOG/sz_tcp.txt"
	for s in $SZ_SIZES; do
		n=$(sz_lat_iters "$s")
		port=$((port + 1))
		ip netns exec "$p-a" build/test/tcp_rr -s $port "$s" &
		sleep 0.3
		line=$(ip netns exec "$p-b" build/test/tcp_rr -c "$net.1" $port "$n" "$s" || true)
		wait || true
		if [[ $line =~ median\ ([0-9.]+)\ us.*p99\ ([0-9.]+)\ us ]]; then
			echo "$s ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" >>"$BL_LOG/sz_tcp.txt"
		else
			bl_fail "tcp_rr $s bytes" "tcp_rr -c $net.1 $port $n $s"
			echo "$s nan nan" >>"$BL_LOG/sz_tcp.txt"
		fi
	done
	return 0
}

# sizes_measure WIRE P NET
sizes_measure() {
	local wire=$1 p=$2 net=$3 t s n name line
	for t in write read send; do
		name="a-$t-$wire"
		echo "-- $wire: ib_${t}_bw -a -n $iters" >&2
		bl_perftest "$name" "$p-a" "$p-b" "$net.1" 0 900 ib_${t}_bw -d uroce0 -x 1 -a -n "$iters"
		if [ "$BL_OK" = 1 ]; then
			bl_results "$BL_LOG/$name" | awk -v w="$wire" -v t="$t" \
				'{print w, t, $1, $2, "-a", $4, $5}' >>"$BL_LOG/sz_bw.txt"
			continue
		fi
		# -a failed twice (logged): one duration run per size instead
		echo "   ib_${t}_bw -a failed; one -D 2 run per size instead" >&2
		for s in $SZ_SIZES; do
			bl_perftest "d-$t-$s-$wire" "$p-a" "$p-b" "$net.1" 0 120 \
				ib_${t}_bw -d uroce0 -x 1 -s "$s" -D 2
			[ "$BL_OK" = 1 ] || continue
			bl_results "$BL_LOG/d-$t-$s-$wire" | tail -1 | awk -v w="$wire" -v t="$t" \
				'{print w, t, $1, $2, "-D", $4, $5}' >>"$BL_LOG/sz_bw.txt"
		done
	done
	for t in write send; do
		echo "-- $wire: ib_${t}_lat -s SIZE, $SZ_SIZES bytes" >&2
		for s in $SZ_SIZES; do
			n=$(sz_lat_iters "$s")
			name="lat-$t-$s-$wire"
			bl_perftest "$name" "$p-a" "$p-b" "$net.1" 0 300 ib_${t}_lat -d uroce0 -x 1 -s "$s" -n "$n"
			[ "$BL_OK" = 1 ] || continue
			line=$(bl_results "$BL_LOG/$name" | tail -1)
			# columns: bytes iterations min max typical(median) avg stdev p99 p99.9
			echo "$line" | awk -v w="$wire" -v t="$t" '{print w, t, $1, $2, $5, $8, $6}' >>"$BL_LOG/sz_lat.txt"
		done
	done
	return 0
}

# sizes_report OUT: CSVs, tables, PNGs
sizes_report() {
	local out=$1 w t s it m mbps mmsg med p99 avg cg cm fr wt tm tp ratio g
	local bw=$out/sizes_bw.csv lat=$out/sizes_lat.csv pd=$BL_LOG/plot
	mkdir -p "$pd"
	rm -f "$pd"/*.dat
	echo "wire,test,bytes,iterations,method,uroce_gbps,uroce_mmsg_s,ceiling_gbps,ceiling_mmsg_s,ceiling_frames,ratio" >"$bw"
	touch "$BL_LOG/sz_bw.txt" "$BL_LOG/sz_lat.txt" "$BL_LOG/sz_tcp.txt"
	while read -r w t s it m mbps mmsg; do
		read -r cg cm fr _ <<<"$(bl_ceiling_goodput "$t" "$s" "${CEIL[$w]}")"
		read -r g ratio <<<"$(awk -v m="$mbps" -v c="$cg" 'BEGIN {g = m * 8 * 1048576 / 1e9
			printf "%.4f %s\n", g, (c > 0 ? sprintf("%.3f", g / c) : "nan")}')"
		echo "$w,$t,$s,$it,$m,$g,$mmsg,$cg,$(awk -v c="$cm" 'BEGIN {printf "%.6f", c / 1e6}'),$fr,$ratio" >>"$bw"
		echo "$s $g" >>"$pd/$w-bw-$t.dat"
	done <"$BL_LOG/sz_bw.txt"
	# ceiling curves at every power of 2 (the -a sizes), whatever uroce managed
	for w in "${!CEIL[@]}"; do
		for t in write read send; do
			for ((s = 2; s <= 8388608; s *= 2)); do
				read -r cg _ <<<"$(bl_ceiling_goodput "$t" "$s" "${CEIL[$w]}")"
				echo "$s $cg" >>"$pd/$w-ceil-$t.dat"
			done
		done
		for s in $SZ_SIZES; do
			read -r _ _ _ wt <<<"$(bl_ceiling_goodput write "$s" "${CEIL[$w]}")"
			echo "$s $wt" >>"$pd/$w-wiretime.dat"
		done
	done
	echo "wire,test,bytes,iterations,median_us,p99_us,avg_us,tcp_one_way_median_us,tcp_one_way_p99_us,wire_time_at_ceiling_us,median_ratio_to_tcp" >"$lat"
	while read -r w t s it med p99 avg; do
		read -r tm tp <<<"$(awk -v s="$s" '$1 == s {printf "%s %s", $2 / 2, $3 / 2}' "$BL_LOG/sz_tcp.txt")"
		read -r _ _ _ wt <<<"$(bl_ceiling_goodput "$t" "$s" "${CEIL[$w]}")"
		ratio=$(awk -v a="$med" -v b="${tm:-0}" 'BEGIN {print (b > 0 ? sprintf("%.2f", a / b) : "nan")}')
		echo "$w,$t,$s,$it,$med,$p99,$avg,${tm:-nan},${tp:-nan},$wt,$ratio" >>"$lat"
		echo "$s $med" >>"$pd/$w-lat-$t-med.dat"
		echo "$s $p99" >>"$pd/$w-lat-$t-p99.dat"
	done <"$BL_LOG/sz_lat.txt"
	awk '$2 != "nan" {print $1, $2 / 2}' "$BL_LOG/sz_tcp.txt" >"$pd/tcp-lat.dat"

	echo
	echo "Throughput against message size: payload Gb/s, uroce / raw ceiling at the same frames"
	echo "(ceiling: testpmd's one-way frame rate at 64..4154-byte frames, interpolated, as goodput;"
	echo " perftest MB/s are MiB/s; -a = one perftest -a run, -D = one duration run per size)"
	awk -F, 'NR > 1 {k = $1 " " $3; if (!(k in seen)) {seen[k] = 1; key[++n] = k}
			v[k, $2] = sprintf("%9.3f %8.3f %5s", $6, $8, $11); how[k] = how[k] $5}
		END {printf "%-10s %8s | %-24s | %-24s | %-24s\n", "wire", "bytes",
				"write: uroce ceil ratio", "read: uroce ceil ratio", "send: uroce ceil ratio"
			for (i = 1; i <= n; i++) {split(key[i], a, " ")
				printf "%-10s %8s | %24s | %24s | %24s\n", a[1], a[2],
					v[key[i], "write"], v[key[i], "read"], v[key[i], "send"]}}' "$bw"
	echo "CSV: $bw"
	echo
	echo "Latency against message size, us (perftest: half a round trip; TCP: tcp_rr round trip / 2;"
	echo " wire: one message's frames at the raw ceiling's rate)"
	awk -F, 'NR > 1 {k = $1 " " $3; if (!(k in seen)) {seen[k] = 1; key[++n] = k}
			v[k, $2] = sprintf("%9.2f %9.2f", $5, $6); tcp[k] = sprintf("%9s %9s", $8, $9); wt[k] = $10}
		END {printf "%-10s %8s | %-19s | %-19s | %-19s | %9s\n", "wire", "bytes",
				"write_lat med  p99", "send_lat med  p99", "TCP one-way med p99", "wire"
			for (i = 1; i <= n; i++) {split(key[i], a, " ")
				printf "%-10s %8s | %19s | %19s | %19s | %9.2f\n", a[1], a[2],
					v[key[i], "write"], v[key[i], "send"], tcp[key[i]], wt[key[i]]}}' "$lat"
	echo "CSV: $lat"
	sizes_plot "$out"
}

# sizes_plot OUT: one panel per wire, log-log
sizes_plot() {
	local out=$1 pd=$BL_LOG/plot w
	local -a wires=(af_packet memif)
	{
		echo "set terminal pngcairo size 1400,560 font ',10'"
		echo "set output '$out/sizes_bw.png'"
		echo "set multiplot layout 1,2 title 'uroce throughput against message size (stock perftest, -a), raw ceiling dashed'"
		echo "set logscale xy 2; set logscale y 10; set grid; set key left top"
		echo "set xlabel 'message size (bytes)'; set ylabel 'payload Gb/s'"
		echo "set format x '%.0b%B'; set xtics 16"
		for w in "${wires[@]}"; do
			echo "set title '$w'"
			local cmd="plot"
			for t in write read send; do
				local c
				case $t in write) c=1 ;; read) c=2 ;; send) c=3 ;; esac
				[ -s "$pd/$w-bw-$t.dat" ] && cmd+=" '$pd/$w-bw-$t.dat' using 1:2 with linespoints lc $c pt 7 ps 0.6 title 'ib_${t}_bw',"
				[ -s "$pd/$w-ceil-$t.dat" ] && cmd+=" '$pd/$w-ceil-$t.dat' using 1:2 with lines lc $c dt 2 title '$t: raw ceiling',"
			done
			if [ "${TCP_GBPS:-nan}" != nan ]; then
				cmd+=" $TCP_GBPS with lines lc 8 dt 4 title 'kernel TCP over veth, 1 stream',"
			fi
			[ "$cmd" = plot ] && cmd="plot 1/0 notitle,"
			echo "${cmd%,}"
		done
		echo "unset multiplot"
		echo "set output '$out/sizes_lat.png'"
		echo "set multiplot layout 1,2 title 'uroce latency against message size (half round trip), TCP and wire time for reference'"
		echo "set ylabel 'microseconds'; set key left top"
		for w in "${wires[@]}"; do
			echo "set title '$w'"
			local cmd="plot"
			[ -s "$pd/$w-lat-write-med.dat" ] && cmd+=" '$pd/$w-lat-write-med.dat' using 1:2 with linespoints lc 1 pt 7 ps 0.6 title 'ib_write_lat median',"
			[ -s "$pd/$w-lat-write-p99.dat" ] && cmd+=" '$pd/$w-lat-write-p99.dat' using 1:2 with linespoints lc 1 dt 3 pt 6 ps 0.6 title 'ib_write_lat p99',"
			[ -s "$pd/$w-lat-send-med.dat" ] && cmd+=" '$pd/$w-lat-send-med.dat' using 1:2 with linespoints lc 3 pt 7 ps 0.6 title 'ib_send_lat median',"
			[ -s "$pd/$w-lat-send-p99.dat" ] && cmd+=" '$pd/$w-lat-send-p99.dat' using 1:2 with linespoints lc 3 dt 3 pt 6 ps 0.6 title 'ib_send_lat p99',"
			[ -s "$pd/tcp-lat.dat" ] && cmd+=" '$pd/tcp-lat.dat' using 1:2 with linespoints lc 8 dt 4 pt 4 ps 0.6 title 'kernel TCP over veth, round trip / 2',"
			[ -s "$pd/$w-wiretime.dat" ] && cmd+=" '$pd/$w-wiretime.dat' using 1:2 with lines lc 2 dt 2 title 'one message at the raw ceiling',"
			[ "$cmd" = plot ] && cmd="plot 1/0 notitle,"
			echo "${cmd%,}"
		done
		echo "unset multiplot"
	} >"$BL_LOG/sizes.gp"
	if gnuplot "$BL_LOG/sizes.gp" 2>"$BL_LOG/sizes.gp.err"; then
		echo "plots: $out/sizes_bw.png $out/sizes_lat.png"
	else
		bl_fail "gnuplot (sizes)" "gnuplot $BL_LOG/sizes.gp" "$BL_LOG/sizes.gp.err"
	fi
}
