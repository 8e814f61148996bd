#!/bin/bash
# The af_packet ceiling's mover (dataplane/raw_bw, tools/raw_bw.sh) moves
# what it says: between two namespaces of a veth pair, its sender's frames
# leave in batches for the kernel's UDP segmentation, and its receiver cuts
# every batch back into frames of exactly the size sent, never counting more
# than were sent; tools/raw_bw.sh reports a rate. tools/bench divides by it.
#   raw_bw.sh BUILD_DIR
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$1"
bin=$build/dataplane/raw_bw
[ -x "$bin" ] || { echo "ERROR: $bin is missing (build first)"; exit 99; }
p=rb$$
p=${p:0:8}
log=$(mktemp -d)
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	ip netns del "$p-a" 2>/dev/null
	ip netns del "$p-b" 2>/dev/null
	rm -rf "$log" "/dev/shm/uroce-raw_bw-t$$"
}
trap cleanup EXIT INT TERM
ip netns add "$p-a" && ip netns add "$p-b" &&
	ip -n "$p-a" link add "${p}a0" type veth peer name "${p}b0" netns "$p-b" &&
	ip -n "$p-a" link set "${p}a0" mtu 9000 up && ip -n "$p-b" link set "${p}b0" mtu 9000 up ||
	{ echo "ERROR: setting up the namespaces"; exit 99; }
eal="--no-pci --no-telemetry --log-level=*:error --no-huge -m 64"
fails=0
for size in 4154 122; do
	ip netns exec "$p-b" "$bin" --file-prefix=rbr-$$ $eal -- -r "${p}b0" 5 "/dev/shm/uroce-raw_bw-t$$" >"$log/rx" 2>&1 &
	rx=$!
	for _ in $(seq 50); do grep -q 'rx ready' "$log/rx" && break; sleep 0.1; done
	ip netns exec "$p-a" "$bin" --file-prefix=rbt-$$ $eal -- -t "${p}a0" "$size" 2 "/dev/shm/uroce-raw_bw-t$$" >"$log/tx" 2>&1
	wait $rx
	read -r sent batched <<<"$(awk '$1 == "tx" {print $3, $5}' "$log/tx")"
	read -r got bytes lost drops <<<"$(awk '$2 == "total" {print $3, $5, $7, $9}' "$log/rx")"
	echo "$size-byte frames: sent $sent ($batched in batches), received $got ($bytes bytes), batches lost $lost, ring drops $drops"
	if [ "${sent:-0}" -gt 0 ] && [ "${batched:-0}" -gt $((sent / 2)) ] && [ "${got:-0}" -gt 0 ] &&
		[ "$got" -le "$sent" ] && [ "$bytes" = $((got * size)) ]; then
		echo "ok: $size-byte frames"
	else
		echo "FAIL: $size-byte frames"; cat "$log/tx" "$log/rx"; fails=$((fails + 1))
	fi
done
read -r pps gbps <<<"$(UROCE_BUILD=$(realpath "$build") \
	"$(dirname "$0")/../../tools/raw_bw.sh" "$p-a" "${p}a0" "$p-b" "${p}b0" 4154 2)"
echo "tools/raw_bw.sh: $pps frames/s, $gbps Gb/s"
if [ "${pps:-0}" -gt 0 ]; then echo "ok: tools/raw_bw.sh"; else echo "FAIL: tools/raw_bw.sh"; fails=$((fails + 1)); fi
[ $fails = 0 ]
