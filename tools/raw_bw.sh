#!/bin/bash
# The raw throughput of af_packet moved as uroce moves it (dataplane/raw_bw:
# uroce's own sockets, batches for the kernel's UDP segmentation, uroce's
# receive ring), sender in one namespace, receiver in the other, each on a
# core of its own as raw_ceiling.sh gives testpmd. Prints
#   pps gbps
# (medians of the receiver's per-second rates, the first and last second left out).
#   raw_bw.sh NS_TX IF_TX NS_RX IF_RX FRAME_SIZE [SECONDS]
set -u
ns_tx=$1 if_tx=$2 ns_rx=$3 if_rx=$4 size=$5 secs=${6:-6}
root=$(cd "$(dirname "$0")/.." && pwd)
b=${UROCE_BUILD:-build}
[[ $b = /* ]] || b=$root/$b
bin=$b/dataplane/raw_bw
out=$(mktemp -d)
shm=/dev/shm/uroce-raw_bw-$$ # the receiver's count, which paces the sender
trap 'kill $rx 2>/dev/null; wait 2>/dev/null; rm -rf "$out" "$shm"' EXIT
eal="--no-pci --no-telemetry --log-level=*:error --no-huge -m 64"
ip netns exec "$ns_rx" taskset -c 1 "$bin" --file-prefix=bw-rx-$$ $eal -- -r "$if_rx" $((secs + 3)) "$shm" >"$out/rx.log" 2>&1 &
rx=$!
for _ in $(seq 60); do grep -q 'rx ready' "$out/rx.log" && break; sleep 0.1; done
ip netns exec "$ns_tx" taskset -c 0 "$bin" --file-prefix=bw-tx-$$ $eal -- -t "$if_tx" "$size" $((secs + 1)) "$shm" >"$out/tx.log" 2>&1
wait $rx
awk '$1 == "rx" && $2 == "frames" && $3 > 0 {f[++n] = $3; b[n] = $5}
	END {
		k = 0
		for (i = 2; i < n; i++) { p[++k] = f[i]; q[k] = b[i] }
		if (!k) { print "0 0.000"; exit }
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) {
			if (p[j] < p[i]) { t = p[i]; p[i] = p[j]; p[j] = t }
			if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
		}
		m = int((k + 1) / 2)
		printf "%d %.3f\n", p[m], q[m] * 8 / 1e9
	}' "$out/rx.log"
