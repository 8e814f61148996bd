#!/bin/bash
# XRC (IBTA annex A14) with the stock programs between two namespaces over
# af_packet: test/verbs/xrc_check.c on one device (the verbs' rules);
# Debian's unmodified ibv_xsrq_pingpong, a server with two clients (one
# sleeping on completion events), which shares one XRC SRQ among its target
# QPs; the same with the devices in selective repeat mode (XRC QPs stay
# go-back-N); then perftest's XRC mode (-c XRC) for SEND, WRITE, READ and
# atomics. The device must advertise XRC, and no XRC request may have been
# refused but xrc_check's one on purpose.
#   xrc.sh BUILD_DIR [ITERATIONS]
# The server's capture of the first run must decode in tshark as RoCEv2 XRC
# packets (Wireshark 4.0 names the opcodes; the XRCETH it shows as the first
# bytes after the BTH, which must name an SRQ the programs printed) and pass
# test/wire/check_wire.py --pcap (every ICRC valid).
# (XRC_NS_PREFIX names the namespaces, default xr<pid>.)
# Exit 77 (skip) without root, namespaces or the programs.
set -u
iters=${2:-500}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/net/lib.sh
source "$here/lib.sh" "$1"
ur_need ibverbs-utils ibv_xsrq_pingpong

p=${XRC_NS_PREFIX:-xr$$}
p=${p:0:8}
net=10.64.$((40 + RANDOM % 10)) # /24 of our own
cleanup() { ur_pair_down "$p"; }
trap cleanup EXIT INT TERM
log=$(mktemp -d)

# ibv_xsrq_pingpong: a server for two clients, -n messages each way per client
pingpong() { # TAG
	local tag=$1 pp=(ibv_xsrq_pingpong -d uroce0 -g 1 -n 200 -p $((18515 + RANDOM % 1000)))
	local spid c1 rc_s rc_1 rc_2 t0

	t0=$EPOCHREALTIME
	ur_in "$p-a" env UROCE_CAPTURE="$log/$tag.pcap" timeout 20 "${pp[@]}" -c 2 \
		>"$log/$tag.srv" 2>&1 &
	spid=$!
	sleep 0.5
	ur_in "$p-b" timeout 20 "${pp[@]}" "$net.1" >"$log/$tag.c1" 2>&1 &
	c1=$!
	ur_in "$p-b" timeout 20 "${pp[@]}" -e "$net.1" >"$log/$tag.c2" 2>&1
	rc_2=$?
	wait $c1
	rc_1=$?
	wait $spid
	rc_s=$?
	printf 'ibv_xsrq_pingpong %s: server %s, clients %s %s, %.2f s\n' "$tag" "$rc_s" "$rc_1" \
		"$rc_2" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')"
	for f in srv c1 c2; do
		if ! grep -qx success "$log/$tag.$f"; then
			bad "ibv_xsrq_pingpong $tag $f"
			sed 's/^/  /' "$log/$tag.$f" | tail -8
		fi
	done
}

ur_pair_up "$p" "$net" 1500 || { echo "FAIL: setting up namespaces"; exit 1; }
if ! ur_in "$p-a" ibv_devinfo -v -d uroce0 | grep -qw XRC; then
	bad "ibv_devinfo -v does not show the XRC capability"
fi
if ur_in "$p-a" timeout -s KILL 30 "$build/test/xrc_check" uroce0 1 >"$log/xrc_check" 2>&1; then
	tail -1 "$log/xrc_check"
else
	bad "xrc_check"
	sed 's/^/  /' "$log/xrc_check" | tail -12
fi
# xrc_check sends once to another domain's SRQ on purpose
refused_a=$(ur_ctr "$p-a" rx_drop_xrc_srq)
[ "$refused_a" -eq 1 ] || bad "rx_drop_xrc_srq $refused_a after xrc_check, want 1"
pingpong gbn

# what went on the wire: XRC opcodes (table 38's 101xxxxx), requests with
# an XRCETH naming one of the SRQs the programs printed
if command -v tshark >/dev/null; then
	srqns=$(cat "$log"/gbn.srv "$log"/gbn.c1 "$log"/gbn.c2 |
		sed -n 's/.*local:.*SRQN \([0-9a-f]*\),.*/\1/p' | sort -u | tr '\n' ' ')
	tshark -r "$log/gbn.pcap" -Y infiniband -T fields -E separator='|' -e frame.protocols \
		-e _ws.malformed -e infiniband.bth.opcode -e infiniband.vendor \
		>"$log/gbn.tshark" 2>/dev/null
	verdict=$(awk -F'|' -v srqns="$srqns" '
		BEGIN { n = split(srqns, s, " "); for (i = 1; i <= n; i++) ok["00" s[i]] = 1 }
		{ frames++ }
		$1 !~ /^eth:ethertype:ip:udp:infiniband/ || $2 != "" { bad++; next }
		$3 < 160 || $3 > 183 { notxrc++; next }
		$3 <= 172 || $3 == 179 || $3 == 180 || $3 >= 182 {
			req++
			if (!(substr($4, 1, 8) in ok)) badsrq++
		}
		END { printf "%d frames, %d XRC requests, %d malformed, %d not XRC, %d naming no SRQ printed",
			frames, req, bad, notxrc, badsrq
			exit !(frames > 0 && req > 0 && !bad && !notxrc && !badsrq) }' "$log/gbn.tshark")
	rc=$?
	echo "tshark, SRQNs $srqns: $verdict"
	[ $rc -eq 0 ] || bad "tshark decode of the XRC capture"
	if ! /usr/bin/python3 "$here/../wire/check_wire.py" --pcap "$log/gbn.pcap" \
		>"$log/gbn.wire" 2>&1; then
		bad "check_wire.py --pcap on the XRC capture"
		tail -5 "$log/gbn.wire"
	fi
	tail -1 "$log/gbn.wire"
fi

# perftest's XRC mode, if this perftest has it
if command -v ib_send_bw >/dev/null && ib_send_bw --help 2>&1 | grep -q 'XRC'; then
	for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
		bw=("$t" -d uroce0 -x 1 -c XRC -n "$iters" -F -p $((19515 + RANDOM % 1000)))
		[ "$t" = ib_atomic_bw ] || bw+=(-s 65536)
		ur_in "$p-a" timeout 30 "${bw[@]}" >"$log/$t.srv" 2>&1 &
		spid=$!
		ur_server_up "$p-a" $spid "${bw[@]}"
		ur_in "$p-b" timeout 30 "${bw[@]}" "$net.1" >"$log/$t.cli" 2>&1
		rc_c=$?
		wait $spid
		rc_s=$?
		# the line after the header: size, iterations, peak and average MB/s
		res=$(awk '/#bytes/ { getline; print $4 " MB/s"; exit }' "$log/$t.cli")
		echo "$t -c XRC: client $rc_c, server $rc_s, ${res:-no result}"
		if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || [ -z "$res" ]; then
			bad "$t -c XRC"
			sed 's/^/  client: /' "$log/$t.cli" | tail -6
			sed 's/^/  server: /' "$log/$t.srv" | tail -6
		fi
	done
else
	echo "perftest has no XRC mode: skipped"
fi
for side in a b; do
	r=$(ur_ctr "$p-$side" rx_drop_xrc_srq)
	[ "$side" = b ] || r=$((r - refused_a))
	[ "$r" -eq 0 ] || bad "$p-$side refused $r XRC requests"
done

# selective repeat devices: XRC QPs keep to go-back-N
ur_pair_mode "$p" sr || bad "uroce link add mode sr"
pingpong sr

rm -rf "$log"
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
