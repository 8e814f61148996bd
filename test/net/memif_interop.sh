#!/bin/bash
# uroce's own memif (dataplane/memif_*.c) against DPDK's memif PMD, both ways:
# dpdk-testpmd forwards between two memif ports, a client of device A's
# memif server and a server for device B's memif client, so every frame
# crosses a DPDK end on its way. testpmd's client buffers are DPDK's
# default 2048 bytes, so the 4 KB frames at path MTU 4096 travel in pieces
# on A's side. ibv_rc_pingpong checks the data it receives (-c), and
# ib_write_bw and ib_read_bw must finish.
#   memif_interop.sh BUILD_DIR
# Exit 77 (skip) without root, namespaces or dpdk-testpmd.
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$1"
ur_need dpdk-dev dpdk-testpmd

p=mi$$
p=${p:0:8}
net=10.62.$((RANDOM % 200 + 20))
sa=/dev/shm/uroce-mi-$p-a.sock
sb=/dev/shm/uroce-mi-$p-b.sock
log=$(mktemp -d)
tp=
cleanup() {
	[ -n "$tp" ] && kill -INT "$tp" 2>/dev/null && wait "$tp" 2>/dev/null
	ur_pair_down "$p"
	rm -f "$sa" "$sb"
	rm -rf "$log"
}
trap cleanup EXIT INT TERM
ur_pair_up "$p" "$net" 9000 "memif:role=server,id=0,socket=$sa" \
	"memif:role=client,id=0,socket=$sb" || { echo "FAIL: setting up namespaces"; exit 1; }

fail=0
# one program pair through testpmd: A's server side first (its memif server
# must listen before testpmd connects to it), then testpmd, then B's client
run() {
	local name=$1
	shift
	ur_in "$p-a" timeout 60 "$@" >"$log/$name.srv" 2>&1 &
	local srv=$!
	for _ in $(seq 100); do [ -S "$sa" ] && break; sleep 0.1; done
	dpdk-testpmd --no-pci --no-huge -m 1024 --file-prefix="mi$$" --log-level='*:error' \
		--vdev="net_memif0,role=client,id=0,socket=$sa,socket-abstract=no" \
		--vdev="net_memif1,role=server,id=0,socket=$sb,socket-abstract=no" -- \
		--forward-mode=io --no-mlockall --stats-period=1 --total-num-mbufs=16384 \
		--mbuf-size=9344 >"$log/$name.testpmd" 2>&1 &
	tp=$!
	for _ in $(seq 100); do [ -S "$sb" ] && break; sleep 0.1; done
	if ur_in "$p-b" timeout 60 "$@" "$net.1" >"$log/$name.cli" 2>&1 && wait "$srv"; then
		echo "ok: $name: $(grep -E 'iters in|^ 65536' "$log/$name.cli" | head -n1 | tr -s ' ')"
	else
		echo "FAIL: $name"
		tail -n 5 "$log/$name.cli" "$log/$name.srv" "$log/$name.testpmd"
		fail=1
	fi
	wait "$srv" 2>/dev/null
	kill -INT "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
	tp=
	rm -f "$sb"
}

run rc_pingpong-check ibv_rc_pingpong -d uroce0 -g 1 -m 4096 -s 8192 -n 200 -c
# testpmd drops what A's ring has no room for (io mode, no backpressure),
# and DPDK's 1024-slot client ring holds 341 frames in pieces: perftest's
# default 128 WRITEs of 16 packets in flight would lose part of every
# window and go-back-N would resend it whole until the retry count runs
# out, as on any lossy path without flow control. Four in flight fit.
run write_bw ib_write_bw -d uroce0 -x 1 -s 65536 -t 4 -D 2
run read_bw ib_read_bw -d uroce0 -x 1 -s 65536 -D 2
exit $fail
