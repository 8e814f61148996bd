#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A sweep of `uroce-lab experiment spray` run in three shards and merged is
# the sweep run whole, byte for byte; a merge with a shard missing or twice
# is refused; the sweep written out by --plan and run from that file with
# --runs gives the same CSV; and a row's `args` column reruns that row alone
# (a start other than the default: the args must carry it).
set -eu
lab=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
opts="--paths ecmp,spray-rr --pfc-modes off,on --flow-size 64K --start 20us --quiet --no-plot"

$lab experiment spray $opts --out "$d/all" >/dev/null
for i in 0 1 2; do
	$lab experiment spray $opts --shard $i/3 --out "$d/s$i" >/dev/null
done
[ "$(wc -l <"$d/all/spray.csv")" -eq 9 ] || { echo "expected 8 runs"; exit 1; }
[ "$(wc -l <"$d/s1/spray.csv")" -eq 4 ] || { echo "shard 1/3 should hold runs 1, 4, 7"; exit 1; }
$lab experiment merge --no-plot --out "$d/m" "$d/s2/spray.csv" "$d/s0/spray.csv" \
	"$d/s1/spray.csv" >/dev/null
cmp "$d/all/spray.csv" "$d/m/spray.csv"
cmp "$d/all/spray-irn.csv" "$d/m/spray-irn.csv"
if $lab experiment merge --no-plot --out "$d/bad" "$d/s0/spray.csv" "$d/s1/spray.csv" \
	2>/dev/null; then
	echo "merge accepted a sweep with shard 2 missing"
	exit 1
fi
if $lab experiment merge --no-plot --out "$d/bad" "$d/s0/spray.csv" "$d/s1/spray.csv" \
	"$d/s2/spray.csv" "$d/s2/spray.csv" 2>/dev/null; then
	echo "merge accepted a shard twice"
	exit 1
fi
# the sweep as a file of runs (--plan), run in two shards from the file
$lab experiment spray $opts --plan >"$d/plan.txt"
[ "$(wc -l <"$d/plan.txt")" -eq 8 ] || { echo "the plan should list 8 runs"; exit 1; }
for i in 0 1; do
	$lab experiment spray --runs "$d/plan.txt" --shard $i/2 --quiet --no-plot \
		--out "$d/f$i" >/dev/null
done
$lab experiment merge --no-plot --out "$d/fm" "$d/f0/spray.csv" "$d/f1/spray.csv" >/dev/null
cmp "$d/all/spray.csv" "$d/fm/spray.csv"
# a line of the file names one run, no more
echo "0 --paths ecmp,spray-rr" >"$d/bad.txt"
if $lab experiment spray --runs "$d/bad.txt" --quiet --no-plot --out "$d/bad" 2>/dev/null; then
	echo "--runs accepted a line naming several runs"
	exit 1
fi
row=$(sed -n 6p "$d/all/spray.csv")
args=${row##*,}
# shellcheck disable=SC2086 # the options are words
$lab experiment spray $args --quiet --no-plot --out "$d/one" >/dev/null
[ "$(sed -n 2p "$d/one/spray.csv" | cut -d, -f2-)" = "$(echo "$row" | cut -d, -f2-)" ] ||
	{ echo "run 4 alone differs"; exit 1; }
echo "sharded + merged == unsharded; a row reruns alone"
