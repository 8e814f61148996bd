#!/bin/bash
# Acceptance for UC, UD and the rest of ibverbs-utils: the stock examples
# (ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong, ibv_asyncwatch;
# ibv_xsrq_pingpong is net/xrc.sh's), perftest over UC and UD, and ud_check (AHs from
# completions, GRH, Q_Key), unmodified, between two network namespaces.
#   ucud.sh BUILD_DIR [af_packet|memif] [VETH_MTU]
# Exit 77 (skip) without root or namespaces.
set -u
build=$1
port=${2:-af_packet}
mtu=${3:-9000}
here=$(cd "$(dirname "$0")" && pwd)
export UROCE=$build/tools/uroce
udc=$build/test/ud_check
# shellcheck source=../../tools/netns.sh
source "$here/../../tools/netns.sh"

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "no network namespaces"; exit 77; }

p=uu$$
p=${p:0:8}
net=10.61.$((RANDOM % 200 + 20)) # /24 of our own
cleanup() { ur_pair_down "$p"; rm -rf "$log"; }
log=$(mktemp -d)
trap cleanup EXIT INT TERM
if [ "$port" = memif ]; then
	read -r pa pb <<<"$(ur_memif_ports "$p")"
else
	pa=$port
	pb=$port
fi
ur_pair_up "$p" "$net" "$mtu" "$pa" "$pb" || { echo "FAIL: setting up namespaces"; exit 1; }

# the IB path MTU the interface allows (RoCE headers take up to 58 bytes of it)
ib_mtu=256
for m in 512 1024 2048 4096; do
	[ $((m + 58)) -le "$mtu" ] && ib_mtu=$m
done

fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

# check NAME RESULT_RE SERVER_CMD CLIENT_CMD: server in -a, client in -b
# (given the server's address last), both must exit 0 and the client print RE.
# Once more when perftest finished but could not calibrate its cycle counter
# against the clock to report ("Can't produce a report": a busy machine).
check() {
	local name=$1 re=$2 srv=$3 cli=$4
	local t0=$SECONDS rc_s rc_c spid try
	for try in 1 2; do
		ur_in "$p-a" timeout 120 $srv >"$log/$name.srv" 2>&1 &
		spid=$!
		ur_server_up "$p-a" $spid $srv
		ur_in "$p-b" timeout 120 $cli "$net.1" >"$log/$name.cli" 2>&1
		rc_c=$?
		wait $spid
		rc_s=$?
		if [ $try = 2 ] || [ $rc_s -ne 0 ] || ! ur_perftest_unreported "$log/$name.cli"; then
			break
		fi
		echo "note $name: perftest could not calibrate its cycle counter; once more"
	done
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || ! grep -Eq "$re" "$log/$name.cli"; then
		bad "$name (client $rc_c, server $rc_s, $((SECONDS - t0)) s)"
		sed 's/^/  client: /' "$log/$name.cli" | tail -8
		sed 's/^/  server: /' "$log/$name.srv" | tail -8
		# where frames went: drops, rings, what the receiver refused
		for side in a b; do
			ur_in "$p-$side" "$UROCE" stat uroce0 -a 2>/dev/null |
				awk -v s="$side" '$2 ~ /^[0-9]+$/ && $2 > 0 { print "  " s ": " $1 " " $2 }'
		done
	else
		ok "$name ($((SECONDS - t0)) s): $(grep -E "$re" "$log/$name.cli" | tail -1 | tr -s ' \t' ' ')"
	fi
}

echo "== port $port, veth MTU $mtu (IB MTU $ib_mtu)"
pp_re='iters in'
check uc_pingpong "$pp_re" "ibv_uc_pingpong -d uroce0 -g 1" "ibv_uc_pingpong -d uroce0 -g 1"
check uc_pingpong_64k "$pp_re" "ibv_uc_pingpong -d uroce0 -g 1 -m $ib_mtu -s 65536 -n 500" \
	"ibv_uc_pingpong -d uroce0 -g 1 -m $ib_mtu -s 65536 -n 500"
# ud_pingpong refuses messages above the port MTU: its default is 2048 bytes
ud_size=$((ib_mtu < 2048 ? ib_mtu : 2048))
check ud_pingpong "$pp_re" "ibv_ud_pingpong -d uroce0 -g 1 -s $ud_size" \
	"ibv_ud_pingpong -d uroce0 -g 1 -s $ud_size"
check srq_pingpong "$pp_re" "ibv_srq_pingpong -d uroce0 -g 1" "ibv_srq_pingpong -d uroce0 -g 1"

# asyncwatch prints events until it is killed: it never exits 0 by itself
ur_in "$p-a" timeout 3 ibv_asyncwatch -d uroce0 >"$log/asyncwatch" 2>&1
rc=$?
if [ $rc -eq 124 ] && grep -q "event_type IBV_EVENT_PORT_ACTIVE (9), port 1" "$log/asyncwatch"; then
	ok "ibv_asyncwatch: port 1 active (ended by timeout, as it never exits by itself)"
else
	bad "ibv_asyncwatch (exit $rc)"
	sed 's/^/  /' "$log/asyncwatch"
fi

bw_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
lat_re='^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
check ib_send_bw_ud "$bw_re" "ib_send_bw -d uroce0 -x 1 -c UD" "ib_send_bw -d uroce0 -x 1 -c UD"
check ib_send_lat_ud "$lat_re" "ib_send_lat -d uroce0 -x 1 -c UD" "ib_send_lat -d uroce0 -x 1 -c UD"
check ib_write_bw_uc "$bw_re" "ib_write_bw -d uroce0 -x 1 -c UC" "ib_write_bw -d uroce0 -x 1 -c UC"
check ib_write_lat_uc "$lat_re" "ib_write_lat -d uroce0 -x 1 -c UC" "ib_write_lat -d uroce0 -x 1 -c UC"
check ib_send_lat_uc "$lat_re" "ib_send_lat -d uroce0 -x 1 -c UC" "ib_send_lat -d uroce0 -x 1 -c UC"
# UC has no flow control and resends nothing: keep the 64 KiB messages to
# three quarters of the receiver's ring, so a stall of the receiving
# process on this busy machine cannot lose any (see README): af_packet's
# packet ring holds 2048 frames, a program's ring from the device daemon
# (memif and the other switched ports) 1024 (provider/port_config.c), where
# 96 messages of 16 frames lost a SEND in one CI run and 1 of 3 runs beside
# two busy loops
ring=2048
[ "$port" = af_packet ] || ring=1024
uc_n=$((ring * ib_mtu / 65536 * 3 / 4))
[ $uc_n -ge 10 ] || uc_n=10
check ib_send_bw_uc "$bw_re" "ib_send_bw -d uroce0 -x 1 -c UC -n $uc_n" \
	"ib_send_bw -d uroce0 -x 1 -c UC -n $uc_n"
udc_port=$((20000 + RANDOM % 20000))
check ud_check "datagrams echoed" "$udc -S -d uroce0 -g 1 -p $udc_port" \
	"$udc -d uroce0 -g 1 -p $udc_port -C"
# GID 0 is the IPv6 link-local one: the GRH is then the IPv6 header
check ud_check_ipv6 "datagrams echoed" "$udc -S -d uroce0 -g 0 -p $((udc_port + 1))" \
	"$udc -d uroce0 -g 0 -p $((udc_port + 1)) -C"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
