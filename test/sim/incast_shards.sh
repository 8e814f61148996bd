#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# `uroce-lab experiment incast` run in three shards and merged gives the
# three CSVs of the run whole, byte for byte (the per-flow rows and the
# queue samples of a run kept in order); a merge with a shard missing is
# refused; and a row's `args` column reruns that row alone.
set -eu
lab=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
opts="--senders 2,4 --configs dcqcn,gbn,sr --duration 2ms --warmup 1ms --seed 3 --quiet --no-plot"

$lab experiment incast $opts --out "$d/all" >/dev/null
for i in 0 1 2; do
	$lab experiment incast $opts --shard $i/3 --out "$d/s$i" >/dev/null
done
[ "$(wc -l <"$d/all/incast.csv")" -eq 7 ] || { echo "expected 6 runs"; exit 1; }
[ "$(wc -l <"$d/s1/incast.csv")" -eq 3 ] || { echo "shard 1/3 should hold runs 1 and 4"; exit 1; }
$lab experiment merge --no-plot --out "$d/m" "$d/s2/incast.csv" "$d/s0/incast.csv" \
	"$d/s1/incast.csv" >/dev/null
for f in incast.csv incast-flows.csv incast-queue.csv; do
	cmp "$d/all/$f" "$d/m/$f"
done
if $lab experiment merge --no-plot --out "$d/bad" "$d/s0/incast.csv" "$d/s1/incast.csv" \
	2>/dev/null; then
	echo "merge accepted the shards with shard 2 missing"
	exit 1
fi
row=$(sed -n 5p "$d/all/incast.csv")
args=${row##*,}
# shellcheck disable=SC2086 # the options are words
$lab experiment incast $args --quiet --no-plot --out "$d/one" >/dev/null
[ "$(sed -n 2p "$d/one/incast.csv" | cut -d, -f2-)" = "$(echo "$row" | cut -d, -f2-)" ] ||
	{ echo "run 3 alone differs"; exit 1; }
echo "incast sharded + merged == unsharded; a row reruns alone"
