#!/bin/bash
# libfabric 1.17 (Debian's libfabric-bin) over uroce, between two
# namespaces: fi_info -p verbs lists uroce0 (its MSG and DGRAM domains and
# the verbs;ofi_rxd RDM one) with the limits ibv_devinfo reports, and
# fi_pingpong -p "verbs;ofi_rxd" -e rdm moves 64-byte and 64 KiB messages
# with its data check (-c); udp;ofi_rxd on the same veth is printed beside
# it. MSG endpoints and verbs;ofi_rxm need rdma_cm, which uroce lacks.
#   libfabric.sh BUILD_DIR
# Exit 77 (skip) without root, namespaces or libfabric-bin.
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh" "$1"
ur_need libfabric-bin fi_info fi_pingpong
ur_need ibverbs-utils ibv_devinfo

ur_test_pair lf


echo "== fi_info -p verbs"
ur_in "$p-a" timeout 30 fi_info -p verbs -v >"$log/info" 2>&1
rc=$?
ur_in "$p-a" ibv_devinfo -v -d uroce0 >"$log/devinfo" 2>&1
# the first value of KEY after the line "type: TYPE" (fi_info -v's per-info blocks)
fi_val() {
	awk -v ty="$1" -v k="$2:" '$1 == "type:" { on = ($2 == ty) } on && $1 == k { print $2; exit }' \
		"$log/info"
}
dv() { awk -v k="$1:" '$1 == k { print $2; exit }' "$log/devinfo"; }
ur_in "$p-a" timeout 30 fi_info -p verbs >"$log/list" 2>&1
# one "provider type domain" line per entry of the short listing
listed=$(awk '$1 == "provider:" { pv = $2 } $1 == "domain:" { d = $2 }
	$1 == "type:" { print pv, $2, d }' "$log/list")
if [ $rc -ne 0 ] || ! grep -qx 'verbs FI_EP_MSG uroce0' <<<"$listed" ||
	! grep -qx 'verbs FI_EP_DGRAM uroce0-dgram' <<<"$listed" ||
	! grep -qx 'verbs;ofi_rxd FI_EP_RDM uroce0-dgram' <<<"$listed"; then
	bad "fi_info -p verbs does not list uroce0's MSG, DGRAM and RDM entries (exit $rc)"
	sed 's/^/  /' "$log/list" | head -20
else
	ok "fi_info -p verbs lists: $(tr '\n' ';' <<<"$listed")"
	for chk in "FI_EP_MSG cq_cnt max_cq" "FI_EP_MSG ep_cnt max_qp" "FI_EP_MSG mr_cnt max_mr" \
		"FI_EP_MSG max_ep_srx_ctx max_srq" "FI_EP_MSG max_msg_size max_msg_sz" \
		"FI_EP_DGRAM max_msg_size active_mtu" "FI_EP_MSG mtu active_mtu"; do
		read -r ty key dev <<<"$chk"
		got=$(fi_val "$ty" "$key")
		want=$(dv "$dev")
		if [ -z "$got" ] || [ -z "$want" ] || [ $((got)) -ne $((want)) ]; then
			bad "fi_info $ty $key ${got:-?}, ibv_devinfo $dev ${want:-?}"
		fi
	done
	[ $fails -eq 0 ] && ok "limits as ibv_devinfo: cq_cnt $(fi_val FI_EP_MSG cq_cnt)," \
		"ep_cnt $(fi_val FI_EP_MSG ep_cnt), mr_cnt $(fi_val FI_EP_MSG mr_cnt)," \
		"srx $(fi_val FI_EP_MSG max_ep_srx_ctx), msg $(fi_val FI_EP_MSG max_msg_size)," \
		"dgram msg $(fi_val FI_EP_DGRAM max_msg_size)"
fi

# pp NAME PROV SIZE ITERS [info]: fi_pingpong server in -a, client in -b,
# data checked; sets $us to the client's microseconds per transfer. With
# "info" a failure is printed but not counted (the comparison run).
pp() {
	local name=$1 prov=$2 size=$3 n=$4 info=${5:-} rc_s rc_c spid
	port=$((port + 1))
	us=
	ur_in "$p-a" timeout 60 fi_pingpong -p "$prov" -e rdm -B $port -S "$size" -I "$n" -c \
		>"$log/$name.srv" 2>&1 &
	spid=$!
	ur_listening "$p-a" "$port"
	ur_in "$p-b" timeout 60 fi_pingpong -p "$prov" -e rdm -P $port -S "$size" -I "$n" -c "$net.1" \
		>"$log/$name.cli" 2>&1
	rc_c=$?
	wait $spid
	rc_s=$?
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	us=$(awk 'NR > 1 && $3 ~ /^=/ { print $7 }' "$log/$name.cli" | tail -1)
	if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ] || [ -z "$us" ]; then
		if [ -n "$info" ]; then
			echo "note fi_pingpong $prov -S $size (client $rc_c, server $rc_s)"
		else
			bad "fi_pingpong $prov -S $size (client $rc_c, server $rc_s)"
		fi
		tail -6 "$log/$name.cli" | sed 's/^/  client: /'
		tail -6 "$log/$name.srv" | sed 's/^/  server: /'
		us=
		return 1
	fi
	return 0
}

echo "== fi_pingpong -e rdm, data checked (-c)"
for spec in 64:2000 65536:200; do
	IFS=: read -r size n <<<"$spec"
	pp "verbs-$size" "verbs;ofi_rxd" "$size" "$n" && uv=$us || uv=
	[ -n "$uv" ] && ok "verbs;ofi_rxd -S $size -I $n: $uv us per transfer"
	pp "udp-$size" "udp;ofi_rxd" "$size" "$n" info && ud=$us || ud=
	[ -n "$ud" ] && ok "udp;ofi_rxd   -S $size -I $n: $ud us per transfer (for comparison)"
done

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
