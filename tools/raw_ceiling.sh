#!/bin/bash
# The raw ceiling of a wire: dpdk-testpmd txonly in one namespace to rxonly
# in the other, DPDK's PMD for the wire (af_packet or memif) and the frame
# size of uroce's traffic. Prints
#   pps gbps
# (medians of testpmd's per-second receive rates after warm-up).
#   raw_ceiling.sh af_packet NS_TX IF_TX NS_RX IF_RX FRAME_SIZE [SECONDS]
#   raw_ceiling.sh memif NS_TX - NS_RX - FRAME_SIZE [SECONDS]
set -u
kind=$1 ns_tx=$2 if_tx=$3 ns_rx=$4 if_rx=$5 size=$6 secs=${7:-6}
out=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "logs in $out" >&2 || rm -rf "$out"
}
trap cleanup EXIT
eal="--no-pci --no-telemetry --log-level=*:error --no-huge -m 512"
case $kind in
af_packet)
	# 9216-byte TPACKET frames, four to a block: room for any frame up to MTU 9000
	va="net_af_packet0,iface=$if_tx,blocksz=36864,framesz=9216,framecnt=1024"
	vb="net_af_packet0,iface=$if_rx,blocksz=36864,framesz=9216,framecnt=1024"
	;;
memif)
	va="net_memif0,role=client,id=0,socket=$out/m.sock,socket-abstract=no,bsize=9216,rsize=11"
	vb="net_memif0,role=server,id=0,socket=$out/m.sock,socket-abstract=no,bsize=9216,rsize=11"
	;;
*) exit 2 ;;
esac
app="--stats-period=1 --mbuf-size=9344 --total-num-mbufs=16384 --nb-cores=1 --no-mlockall --burst=32"
# receiver on CPU 1, sender on CPU 0: each side one busy core, as uroce gets
ip netns exec "$ns_rx" dpdk-testpmd --lcores='0@1,1@1' --file-prefix=ceil-rx-$$ $eal \
	--vdev="$vb" -- --forward-mode=rxonly $app >"$out/rx.log" 2>&1 &
pids+=($!)
for _ in $(seq 60); do grep -aq 'start packet forwarding' "$out/rx.log" && break; sleep 0.5; done
# --txpkts after --mbuf-size, or testpmd silently falls back to 64-byte frames
ip netns exec "$ns_tx" dpdk-testpmd --lcores='0@0,1@0' --file-prefix=ceil-tx-$$ $eal \
	--vdev="$va" -- --forward-mode=txonly $app --txpkts="$size" >"$out/tx.log" 2>&1 &
pids+=($!)
for _ in $(seq 60); do grep -aq 'Tx-pps: *[1-9]' "$out/tx.log" && break; sleep 0.5; done
sleep "$secs"
median() { sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print 0}'; }
# per-second receive rates with traffic, minus the first (warm-up) and last (partial) second
steady() { awk -v c="$1" '$2 > 0 {print $c}' | tail -n +2 | sed '$d'; }
pps=$(grep -a 'Rx-pps:' "$out/rx.log" | steady 2 | median)
bps=$(grep -a 'Rx-pps:' "$out/rx.log" | steady 4 | median)
echo "$pps $(awk -v b="$bps" 'BEGIN {printf "%.3f", b / 1e9}')"
