#!/bin/bash
# `uroce-lab compare --live-only` in rounds (issue 24): three interleaved
# rounds of 1-second ib_write_bw runs at loss 0 and 1%, then the table and
# the CSVs must carry the new columns with sane values: every live cell ran
# 3 rounds, lossy fractions lie in (0, 4), each interval holds its median
# and sits inside min..max, the old CSV columns are first and in place, and
# round 2 ran the cells in the reverse order of round 1.
#   compare_rounds.sh BUILD_DIR
# Uses compare's own namespaces (urcmpPID-a, urcmpPID-b). Exit 77 (skip) without
# root, namespaces or perftest.
set -u
build=$1
lab=$build/tools/uroce-lab

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "no network namespaces"; exit 77; }
command -v ib_write_bw >/dev/null && command -v ib_write_lat >/dev/null ||
	{ echo "no perftest"; exit 77; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

"$lab" compare --live-only --rounds 3 --live-duration 1 --loss 0,0.01 --no-plot \
	--out "$out" >"$out/table" 2>"$out/err"
rc=$?
cat "$out/table"
[ $rc -eq 0 ] && ok "compare ran" || { bad "compare exit $rc"; tail -20 "$out/err"; }

grep -Eq '^where .* n +min +max +ci lo +ci hi +sim$' "$out/table" &&
	ok "table has n, min, max, ci lo, ci hi, sim" || bad "table header"
[ "$(grep -c '^round [0-9]*: steal' "$out/table")" -eq 3 ] &&
	ok "three rounds with steal, iowait, runnable" || bad "per-round load lines"
[ "$(grep -c '^live ' "$out/table")" -eq 4 ] && ok "four live rows" || bad "live rows"

csv=$out/compare.csv
head -1 "$csv" | grep -q '^source,mode,loss,goodput_gbps,goodput_fraction,model_fraction,window_pkts,retx_bytes,naks,sacks,timeouts,fct_p50_us,fct_p99_us,ok,rounds,fraction_min,fraction_max,fraction_ci_lo,fraction_ci_hi,ci_coverage,goodput_min_gbps,goodput_max_gbps,goodput_ci_lo_gbps,goodput_ci_hi_gbps,sim_fraction,sim_goodput_gbps,steal_max_pct,iowait_max_pct,runnable_max,note,burst,reorder,reorder_depth,loss_back,burst_back,reorder_back,reorder_back_depth$' &&
	ok "CSV header: old columns first, new ones after" || bad "CSV header: $(head -1 "$csv")"
# Every live row: 3 rounds, ok, lo <= median <= hi inside min..max, lossy fraction in (0, 4) (a busy host has seen a lossy SR run at 2.67x its own lossless one: this checks the report, not the protocol).
if awk -F, 'NR > 1 && $1 == "live" {
		n++
		if ($14 != 1 || $15 != 3) { print "row " NR ": ok " $14 ", rounds " $15; e++ }
		if (!($16 <= $18 && $18 <= $5 && $5 <= $19 && $19 <= $17)) {
			print "row " NR ": min " $16 " lo " $18 " median " $5 " hi " $19 " max " $17; e++ }
		if ($3 > 0 && !($5 > 0 && $5 < 4)) { print "row " NR ": fraction " $5; e++ }
		if ($3 == 0 && $5 != 1) { print "row " NR ": lossless fraction " $5; e++ }
		if ($25 == "" || $25 <= 0 || $25 > 1.01) { print "row " NR ": sim " $25; e++ }
	}
	END { exit (n == 4 && !e) ? 0 : 1 }' "$csv"; then
	ok "live rows: 3 rounds, intervals hold their medians, fractions in (0, 4), sim predictions"
else
	bad "live rows"; cat "$csv"
fi

rounds=$out/compare-rounds.csv
[ "$(tail -n +2 "$rounds" | wc -l)" -eq 12 ] && ok "12 cells in compare-rounds.csv" ||
	bad "compare-rounds.csv has $(tail -n +2 "$rounds" | wc -l) cells"
r1=$(awk -F, '$1 == 1 { printf "%s/%s ", $3, $4 }' "$rounds")
r2=$(awk -F, '$1 == 2 { s = $3 "/" $4 " " s } END { printf "%s", s }' "$rounds")
[ -n "$r1" ] && [ "$r1" = "$r2" ] && ok "round 2 reverses round 1 ($r1)" ||
	bad "order: round 1 '$r1', round 2 reversed '$r2'"

[ $fails -eq 0 ] && echo "compare_rounds: all ok" || echo "compare_rounds: $fails failed"
[ $fails -eq 0 ]
