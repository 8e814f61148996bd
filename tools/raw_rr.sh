#!/bin/bash
# The raw request/response latency of a wire: dataplane/raw_rr's ping-pong
# between the two namespaces, packets moved as uroce moves them (over
# af_packet, uroce's own packet sockets; over memif, DPDK's PMD), nothing
# above. Each way
# carries FRAMES frames in one burst (default 2: a RoCE request and the ACK
# of the peer's last one, as ib_write_lat's steady state sends them).
# Prints the median round trip in us.
#   raw_rr.sh af_packet NS_A IF_A NS_B IF_B [N [FRAMES]]
#   raw_rr.sh memif NS_A - NS_B - [N [FRAMES]]
set -u
kind=$1 ns_a=$2 if_a=$3 ns_b=$4 if_b=$5 n=${6:-20000} frames=${7:-2}
bin=$(cd "$(dirname "$0")/.." && pwd)/build/dataplane/raw_rr
out=$(mktemp -d)
trap 'kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
eal="--no-pci --no-telemetry --log-level=*:error --no-huge -m 256"
ta=() tb=() va=() vb=()
case $kind in
af_packet)
	ta=(-a "$if_a") tb=(-a "$if_b")
	;;
memif)
	va=(--vdev="net_memif0,role=server,id=0,socket=$out/m.sock,socket-abstract=no")
	vb=(--vdev="net_memif0,role=client,id=0,socket=$out/m.sock,socket-abstract=no")
	;;
*) exit 2 ;;
esac
# one busy core each, as testpmd and uroce get; the server stops at the client's goodbye
ip netns exec "$ns_a" "$bin" -l 1 --file-prefix=rr-a-$$ $eal "${va[@]}" -- "${ta[@]}" -s >"$out/srv.log" 2>&1 &
srv=$!
sleep 1
ip netns exec "$ns_b" timeout 120 "$bin" -l 0 --file-prefix=rr-b-$$ $eal "${vb[@]}" -- "${tb[@]}" -c "$n" 64 "$frames" |
	sed -nE 's/.*median ([0-9.]+) us.*/\1/p'
