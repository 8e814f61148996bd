#!/bin/bash
# A short soak in each retransmission mode: 16 QPs of every opcode mixed,
# 1% loss and 1% reordering on both sides (data, ACKs, SACKs, NAKs, READ
# responses alike), every byte checked; any error completion, wrong or
# missing byte fails it. The long runs are `tools/soak --minutes 10`.
#   soak_short.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=$(cd "$1" && pwd)
secs=${2:-20}
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "soak_short: SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "soak_short: SKIP: no network namespaces"; exit 77; }
rc=0
for mode in gbn sr; do
	echo "== $mode, $secs s"
	UROCE_BUILD=$build "$src/tools/soak" --mode "$mode" --seconds "$secs" --loss 0.01 \
		--reorder 0.01 --seed 4242 --prefix urss --net 10.95.0 || rc=1
done
exit $rc
