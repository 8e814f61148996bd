#!/bin/bash
# Batches of frames over af_packet (dataplane/udp_gso.c) on a path where the
# kernel must cut them, and on one where it need not:
#
#   a: uroce0 on ga0 -- gra [bridge in r] grb -- gb0: uroce0 on b
#                                         (tbf)
#
# The bridge's port toward b has a tbf qdisc that takes nothing longer than
# 9100 bytes, so the kernel cuts every batch from a into frames there, as it
# would for a NIC without the offload. a -> b (ib_write_bw, RC over IPv4
# and IPv6, and ib_read_bw, whose responses b batches toward a): a sends
# batches, b receives most of them cut, and every frame captured on b's
# interface has the ICRC and UDP pseudo-header sum that scapy computes again.
# b -> a: the batches cross the bridge whole and a cuts them itself. No ICRC
# error, no retransmission anywhere.
#   gso.sh BUILD_DIR
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$1"
ur_need perftest ib_write_bw ib_read_bw
ur_need tshark tshark
ur_need python3-scapy python3
/usr/bin/python3 -c 'import scapy.contrib.roce' 2>/dev/null || { echo "SKIP: no scapy"; exit 77; }

p=gs$$
p=${p:0:8}
net=10.67.$((RANDOM % 200 + 20))
log=$(mktemp -d)
pids=()
down() {
	local s
	for s in a b; do
		ip netns exec "$p-$s" "$UROCE" link del uroce0 2>/dev/null
	done
	for s in a b r; do
		ip netns del "$p-$s" 2>/dev/null
	done
	return 0
}
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	down
	rm -rf "$log"
}
trap cleanup EXIT INT TERM

up() {
	local s
	ip netns add "$p-r" && ip -n "$p-r" link add br0 type bridge &&
		ip -n "$p-r" link set br0 up || return 1
	for s in a b; do
		ip netns add "$p-$s" &&
			ip link add "${p}${s}0" type veth peer name "${p}r$s" &&
			ip link set "${p}${s}0" netns "$p-$s" && ip link set "${p}r$s" netns "$p-r" &&
			ip -n "$p-r" link set "${p}r$s" master br0 mtu 9000 up &&
			ip -n "$p-$s" link set "${p}${s}0" mtu 9000 up &&
			ip -n "$p-$s" link set lo up || return 1
	done
	ip -n "$p-a" addr add "$net.1/24" dev "${p}a0" &&
		ip -n "$p-b" addr add "$net.2/24" dev "${p}b0" &&
		ip -n "$p-a" addr add "fd67::1/64" dev "${p}a0" nodad &&
		ip -n "$p-b" addr add "fd67::2/64" dev "${p}b0" nodad &&
		ip netns exec "$p-r" tc qdisc add dev "${p}rb" root tbf rate 10gbit burst 9000 \
			limit 8mb &&
		ip netns exec "$p-a" "$UROCE" link add uroce0 netdev "${p}a0" &&
		ip netns exec "$p-b" "$UROCE" link add uroce0 netdev "${p}b0"
}
down
up || { echo "FAIL: setting up the bridge and namespaces"; exit 1; }

# the GID index of an address on uroce0 in a namespace
gid_of() {
	ur_in "$1" ibv_devinfo -v -d uroce0 | grep -F "$2" | grep -m1 -o 'GID\[ *[0-9]*\]' | tr -dc 0-9
}

# ctr NS COUNTER
ctr() { ur_ctr "$1" "$2"; }

# perf NAME TEST SERVER_NS CLIENT_NS ADDR GID_INDEX: one perftest run, server in SERVER_NS
perf() {
	local name=$1 t=$2 sns=$3 cns=$4 addr=$5 gid=$6 spid rc=0
	ur_in "$sns" timeout 60 "$t" -d uroce0 -x "$gid" -s 65536 -n 300 -F >"$log/$name.srv" 2>&1 &
	spid=$!
	ur_listening "$sns" 18515 || { bad "$name: the server never listened"; return 1; }
	ur_in "$cns" timeout 60 "$t" -d uroce0 -x "$gid" -s 65536 -n 300 -F "$addr" \
		>"$log/$name.cli" 2>&1 || rc=$?
	wait "$spid" || rc=$?
	if [ $rc -ne 0 ]; then
		bad "$name (exit $rc)"
		tail -n 4 "$log/$name.cli" "$log/$name.srv" | sed "s/^/  /"
		return 1
	fi
	return 0
}

g4=$(gid_of "$p-a" "$net.1")
g6=$(gid_of "$p-a" "fd67::1")
[ -n "$g4" ] && [ -n "$g6" ] || { echo "FAIL: no GID for $net.1 or fd67::1 on a"; exit 1; }

echo "== a -> b through the tbf: the kernel cuts a's batches"
ip netns exec "$p-b" tshark -q -i "${p}b0" -f "udp port 4791" -w "$log/b.pcap" >/dev/null 2>&1 &
pids+=($!)
for ((i = 0; i < 50; i++)); do [ -s "$log/b.pcap" ] && break; sleep 0.1; done
perf write4 ib_write_bw "$p-b" "$p-a" "$net.2" "$g4"
perf write6 ib_write_bw "$p-b" "$p-a" "$net.2" "$g6" # the GID says IPv6; perftest's own socket stays on IPv4
perf read4 ib_read_bw "$p-a" "$p-b" "$net.1" "$g4"
sleep 0.5
kill -INT "${pids[0]}"
wait "${pids[0]}" 2>/dev/null
pids=()

batched=$(ctr "$p-a" dp_tx_gso_frames)
whole_b=$(ctr "$p-b" dp_rx_gso_frames)
# a batch of two 4 KB frames fits under the tbf's 9000 bytes and passes whole
if [ "$batched" -gt 0 ] && [ "$whole_b" -lt $((batched / 2)) ]; then
	ok "a sent $batched frames in batches; b received $whole_b of them whole (the tbf cut the rest)"
else
	bad "a sent $batched frames in batches, b received $whole_b whole: the tbf was to cut them"
fi

# Each frame captured on b: a batch that passed whole (skipped), a frame
# uroce sent alone (UDP checksum 0), or one the kernel cut from a batch.
# Those are still to be checksummed by the "NIC" (veth offloads it), so
# their UDP checksum field holds the pseudo-header's sum for the frame's
# own length: what the kernel made of the batch header's. The ICRC of
# every IPv4 frame is computed again by scapy; uroce's parser checks the
# IPv6 ones (rx_icrc_errors, below).
/usr/bin/python3 - "$log/b.pcap" >"$log/scapy.out" 2>&1 <<'EOF'
import socket
import struct
import sys
from scapy.all import rdpcap, raw, Ether, UDP, IP, IPv6
from scapy.contrib.roce import BTH


def pseudo_sum(p):
    if IP in p:
        ph = socket.inet_pton(socket.AF_INET, p[IP].src)
        ph += socket.inet_pton(socket.AF_INET, p[IP].dst) + struct.pack("!BBH", 0, 17, p[UDP].len)
    else:
        ph = socket.inet_pton(socket.AF_INET6, p[IPv6].src)
        ph += socket.inet_pton(socket.AF_INET6, p[IPv6].dst) + struct.pack("!IxxxB", p[UDP].len, 17)
    s = sum(struct.unpack("!%dH" % (len(ph) // 2), ph))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


frames = batches = cut = alone = bad_icrc = bad_csum = 0
for p in rdpcap(sys.argv[1]):
    if UDP not in p or p[UDP].dport != 4791 or BTH not in p:
        continue
    if p[UDP].len > 4400:
        batches += 1
        continue
    frames += 1
    if IP in p:
        sent = p[BTH].icrc
        again = Ether(raw(p))
        again[BTH].icrc = None
        if Ether(raw(again))[BTH].icrc != sent:
            bad_icrc += 1
    if p[UDP].chksum == 0:
        alone += 1
    elif p[UDP].chksum == pseudo_sum(p):
        cut += 1
    else:
        bad_csum += 1
print(frames, cut, alone, batches, bad_icrc, bad_csum)
EOF
read -r frames cut alone batches bad_icrc bad_csum <"$log/scapy.out"
if [ "${frames:-0}" -gt 1000 ] && [ "${cut:-0}" -gt 1000 ] && [ "$bad_icrc" -eq 0 ] &&
	[ "$bad_csum" -eq 0 ]; then
	ok "captured on b: $frames RoCE frames, $cut of them cut by the kernel with the right" \
		"pseudo-header sum, $alone sent alone; every IPv4 ICRC right ($batches batches passed whole)"
else
	bad "captured on b: frames ${frames:-?}, cut ${cut:-?}, alone ${alone:-?}," \
		"bad ICRC ${bad_icrc:-?}, bad UDP checksum ${bad_csum:-?}"
	sed 's/^/  /' "$log/scapy.out" | tail -5
fi

echo "== b -> a across the bridge: a receives b's batches whole"
perf write4r ib_write_bw "$p-a" "$p-b" "$net.1" "$g4"
whole_a=$(ctr "$p-a" dp_rx_gso_frames)
if [ "$whole_a" -gt 0 ]; then
	ok "a received $whole_a frames in batches and cut them itself"
else
	bad "a received no batch whole (b sent $(ctr "$p-b" dp_tx_gso_frames) frames in batches)"
fi

for s in a b; do
	e=0
	for c in rx_icrc_errors retransmitted_packets local_ack_timeout_err out_of_sequence; do
		e=$((e + $(ctr "$p-$s" $c)))
	done
	if [ $e -eq 0 ]; then
		ok "$s: no ICRC error, retransmission, ACK timeout or sequence error"
	else
		bad "$s: $e ICRC errors, retransmissions, ACK timeouts or sequence errors"
		ip netns exec "$p-$s" "$UROCE" stat uroce0 -a | awk 'NR > 2 && $2 != 0' | sed 's/^/  /'
	fi
done

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
