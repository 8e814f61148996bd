#!/bin/bash
# Acceptance: the stock binaries of Debian's ibverbs-utils and perftest,
# unmodified, between two network namespaces over uroce devices.
#   perftest.sh BUILD_DIR [af_packet|memif] [VETH_MTU] [MODE_A MODE_B]
# MODE_A/MODE_B (gbn or sr, default gbn) are each side's UROCE_MODE: sr on
# both runs every test in selective repeat, sr against gbn must fall back to
# go-back-N; the counters are checked either way.
# Exit 77 (skip) without root or namespaces.
set -u
build=$1
port=${2:-af_packet}
mtu=${3:-9000}
mode_a=${4:-gbn}
mode_b=${5:-gbn}
here=$(cd "$(dirname "$0")" && pwd)
export UROCE=$build/tools/uroce
# shellcheck source=../../tools/netns.sh
source "$here/../../tools/netns.sh"

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "no network namespaces"; exit 77; }

p=pt$$
p=${p:0:8}
net=10.81.$((RANDOM % 200)) # /24 of our own
cleanup() { ur_pair_down "$p"; }
trap cleanup EXIT INT TERM
if [ "$port" = memif ]; then
	read -r pa pb <<<"$(ur_memif_ports "$p")"
else
	pa=$port
	pb=$port
fi
ur_pair_up "$p" "$net" "$mtu" "$pa" "$pb" || { echo "FAIL: setting up namespaces"; exit 1; }

fails=0
log=$(mktemp -d)

# run NAME SERVER_CMD... -- CLIENT_CMD... : server in -a, client in -b, both must
# exit 0 and the client must print what RESULT_RE matches.
check() {
	local name=$1 re=$2 srv=$3 cli=$4 again=${5:-}
	local t0=$SECONDS rc_s rc_c
	# line-buffered, so a side killed by timeout still leaves its output;
	# the provider's debug log kept, for a failure that does not come back
	ur_in "$p-a" env UROCE_MODE="$mode_a" UROCE_DEBUG=1 UROCE_DEBUG_FILE="$log/$name.dbg" \
		timeout 120 stdbuf -oL $srv >"$log/$name.srv" 2>&1 &
	local spid=$!
	ur_server_up "$p-a" $spid $srv
	ur_in "$p-b" env UROCE_MODE="$mode_b" UROCE_DEBUG=1 UROCE_DEBUG_FILE="$log/$name.dbg" \
		timeout 120 stdbuf -oL $cli "$net.1" >"$log/$name.cli" 2>&1
	rc_c=$?
	wait $spid
	rc_s=$?
	if [ $rc_c -ne 0 ] && [ -z "$again" ] &&
		ur_perftest_unreported "$log/$name.cli"; then
		# perftest times with the CPU's cycle counter and refuses to report
		# when it cannot calibrate it against the clock (r^2 < 0.9): a busy
		# host's doing, not the transfer's (every size had completed)
		echo "note $name: perftest could not calibrate its cycle counter; once more"
		check "$name" "$re" "$srv" "$cli" again
		return
	fi
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || ! grep -Eq "$re" "$log/$name.cli"; then
		echo "FAIL $name (client $rc_c, server $rc_s, $((SECONDS - t0)) s)"
		sed "s/^/  client: /" "$log/$name.cli" | tail -20
		sed 's/^/  server: /' "$log/$name.srv" | tail -20
		[ -s "$log/$name.dbg" ] && grep -vE ' -> |open|GID|MTU|neighbour|ARP' "$log/$name.dbg" |
			sed 's/^/  debug: /' | tail -20
		fails=$((fails + 1))
	else
		echo "ok   $name ($((SECONDS - t0)) s): $(grep -E "$re" "$log/$name.cli" | tail -1 | tr -s ' \t' ' ')"
	fi
}

echo "== port $port, veth MTU $mtu, modes $mode_a/$mode_b"
if ur_in "$p-a" ibv_devices | grep -q uroce0; then
	echo "ok   ibv_devices"
else
	echo "FAIL ibv_devices"
	fails=$((fails + 1))
fi
if ur_in "$p-a" ibv_devinfo -v >"$log/devinfo" 2>&1 && grep -q "PORT_ACTIVE" "$log/devinfo" &&
	grep -q "GID\[  1\]:.*::ffff:$net.1" "$log/devinfo"; then
	echo "ok   ibv_devinfo -v"
else
	echo "FAIL ibv_devinfo -v"
	sed 's/^/  /' "$log/devinfo" | tail -20
	fails=$((fails + 1))
fi

pp_re='iters in'
check rc_pingpong "$pp_re" "ibv_rc_pingpong -d uroce0 -g 1" "ibv_rc_pingpong -d uroce0 -g 1"
check rc_pingpong_64k "$pp_re" "ibv_rc_pingpong -d uroce0 -g 1 -m 4096 -s 65536 -n 10000" \
	"ibv_rc_pingpong -d uroce0 -g 1 -m 4096 -s 65536 -n 10000"
bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
lat_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
for t in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
	check "$t" "$bw_re" "$t -d uroce0 -x 1" "$t -d uroce0 -x 1"
done
check ib_write_bw_all "$bw_re" "ib_write_bw -d uroce0 -x 1 -a -n 200" "ib_write_bw -d uroce0 -x 1 -a -n 200"
for t in ib_write_lat ib_read_lat ib_send_lat; do
	check "$t" "$lat_re" "$t -d uroce0 -x 1" "$t -d uroce0 -x 1"
done
# event mode (completion channels through the provider's interposer); perftest
# itself refuses `ib_write_bw -e` ("Events feature not available on WRITE verb")
check rc_pingpong_events "$pp_re" "ibv_rc_pingpong -d uroce0 -g 1 -e" "ibv_rc_pingpong -d uroce0 -g 1 -e"
check ib_send_lat_events "$lat_re" "ib_send_lat -d uroce0 -x 1 -e" "ib_send_lat -d uroce0 -x 1 -e"
check ib_send_bw_events "$bw_re" "ib_send_bw -d uroce0 -x 1 -e" "ib_send_bw -d uroce0 -x 1 -e"
check ib_read_bw_events "$bw_re" "ib_read_bw -d uroce0 -x 1 -e" "ib_read_bw -d uroce0 -x 1 -e"
# capture: the client writes every RoCE frame it sends and receives
# (UROCE_CAPTURE); Wireshark's dissector and scapy's ICRC must accept them all
check capture "$pp_re" "ibv_rc_pingpong -d uroce0 -g 1 -n 50" \
	"env UROCE_CAPTURE=$log/capture.pcap ibv_rc_pingpong -d uroce0 -g 1 -n 50"
if /usr/bin/python3 "$here/../wire/check_wire.py" --pcap "$log/capture.pcap" >"$log/capture.txt" 2>&1; then
	echo "ok   capture decodes: $(tail -1 "$log/capture.txt")"
else
	echo "FAIL capture decodes"
	sed 's/^/  /' "$log/capture.txt" | tail -8
	fails=$((fails + 1))
fi
# the retransmission mode the two sides were asked for is the one they ran
negotiated=$(ip netns exec "$p-a" "$UROCE" stat uroce0 | awk '$1 == "sr_negotiated" { print $2 }')
negotiated=${negotiated:-0}
if [ "$mode_a" = sr ] && [ "$mode_b" = sr ]; then
	[ "$negotiated" -gt 0 ] && echo "ok   selective repeat on $negotiated QPs" ||
		{ echo "FAIL no QP negotiated selective repeat"; fails=$((fails + 1)); }
else
	[ "$negotiated" -eq 0 ] && echo "ok   go-back-N on every QP" ||
		{ echo "FAIL $negotiated QPs negotiated selective repeat with a gbn peer"; fails=$((fails + 1)); }
fi
rm -rf "$log"
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
