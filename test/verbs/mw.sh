#!/bin/bash
# Memory windows end to end: mw_check (stock libibverbs only) between two
# network namespaces joined by a veth pair, a uroce device in each: type 1
# and type 2 binds (ibv_bind_mw, IBV_WR_BIND_MW, ibv_wr_bind_mw), WRITE and
# READ through the windows' R_Keys, SEND with Invalidate and LOCAL_INV, the
# access refused after each and out of bounds, a bind refused.
#   mw.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u

build=${1:?usage: mw.sh BUILD_DIR}
uroce=$build/tools/uroce
mc=$build/test/mw_check

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }
for f in "$uroce" "$mc"; do
	[ -x "$f" ] || { echo "FAIL: $f is missing (build first)"; exit 1; }
done

# Names of our own (tm*, 10.79.0.0/24) so nothing else's namespaces are touched.
id=$(($$ % 100000))
ns_a=tm${id}a
ns_b=tm${id}b
if_a=tm${id}a0
if_b=tm${id}b0
ip_a=10.79.0.1
ip_b=10.79.0.2
port=$((20000 + RANDOM % 20000))
log=$(mktemp -d /tmp/mw_check.XXXXXX)
made_ns=()

# shellcheck disable=SC2317 # invoked by the traps
cleanup() {
	local rc=$? left
	trap - EXIT INT TERM
	left=$(jobs -pr)
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086
		kill $left 2>/dev/null
		wait 2>/dev/null
	fi
	for ns in "${made_ns[@]}"; do
		ip netns exec "$ns" "$uroce" link del uroce0 >/dev/null 2>&1
		ip netns del "$ns" 2>/dev/null
	done
	ip link del "$if_a" 2>/dev/null
	rm -rf "$log"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

setup() {
	ip netns add "$ns_a" && made_ns+=("$ns_a") &&
		ip netns add "$ns_b" && made_ns+=("$ns_b") &&
		ip link add "$if_a" type veth peer name "$if_b" &&
		ip link set "$if_a" netns "$ns_a" && ip link set "$if_b" netns "$ns_b" &&
		ip -n "$ns_a" addr add "$ip_a/24" dev "$if_a" &&
		ip -n "$ns_b" addr add "$ip_b/24" dev "$if_b" &&
		ip -n "$ns_a" link set "$if_a" up && ip -n "$ns_b" link set "$if_b" up &&
		ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
		ip netns exec "$ns_a" "$uroce" link add uroce0 netdev "$if_a" ${MW_CAPTURE:+capture "$MW_CAPTURE"} &&
		ip netns exec "$ns_b" "$uroce" link add uroce0 netdev "$if_b"
}

ns_env() {
	ip netns exec "$1" "$uroce" env | sed -n 's/^export //p'
}

if ! setup >"$log/setup" 2>&1; then
	echo "FAIL: setting up the namespaces and devices"
	sed 's/^/  setup: /' "$log/setup"
	exit 1
fi
mapfile -t env_a < <(ns_env "$ns_a")
mapfile -t env_b < <(ns_env "$ns_b")
t0=$(date +%s.%N)
ip netns exec "$ns_a" env "${env_a[@]}" timeout -s KILL 60 "$mc" --server --port "$port" \
	>"$log/srv" 2>&1 &
spid=$!
ip netns exec "$ns_b" env "${env_b[@]}" timeout -s KILL 60 "$mc" --client "$ip_a" --port "$port" \
	>"$log/cli" 2>&1 &
wait $!
rc_c=$?
wait "$spid"
rc_s=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
sed 's/^/  /' "$log/srv" "$log/cli"
counters=$(ip netns exec "$ns_a" "$uroce" stat uroce0 | awk '$1 ~ /^(mw_|resp_mw_refused|resp_remote_access_errors)/ { printf "%s %s, ", $1, $2 }')
echo "  server counters: ${counters%, }"
if [ $rc_c -ne 0 ] || [ $rc_s -ne 0 ]; then
	echo "FAIL mw_check (client exit $rc_c, server exit $rc_s, $secs s)"
	exit 1
fi
echo "ok   mw_check ($secs s)"
