#!/bin/bash
# A short soak of shared devices (issue 25): 16 soak programs on each of
# two devices at once, each with QPs of its own, every opcode mixed and
# every byte checked, no loss injected, QP timeout 14 (67 ms). Any error
# completion or wrong, missing or misordered byte in any of the 32
# programs fails it, and so does any local ACK timeout after the first
# 10 s: with nothing lost each is an answer that came 67 ms late (the late
# answerer's job, provider/answerer.c). The programs' start is left out
# (--settle 10: the kernel zeroing 32 receive rings holds the CPUs, a
# known open cause, docs/testing.md). The long run is `tools/soak --programs 16
# [--port memif] --minutes 10 --timeout 14 --loss 0 --reorder 0
# --no-ack-timeouts`.
#   soak_shared.sh BUILD_DIR [SECONDS] [af_packet|memif]
set -euo pipefail
build=$(cd "$1" && pwd)
secs=${2:-30}
kind=${3:-af_packet}
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "soak_shared: SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "soak_shared: SKIP: no network namespaces"; exit 77; }
UROCE_BUILD=$build exec "$src/tools/soak" --programs 16 --qps 2 --seconds "$secs" \
	--port "$kind" --loss 0 --reorder 0 --timeout 14 --no-ack-timeouts --settle 10 --report 10 --seed 1616 \
	--prefix ursh$$ --net 10.96.$(($$ % 200 + 20))
