#!/bin/bash
# What uroce leaves on the machine: nothing.
#   1. 100 programs on a uroce device, half of them exiting cleanly
#      (ibv_devinfo), half killed with SIGKILL while they hold the device
#      open (ibv_rc_pingpong servers waiting for a client): none leaves a
#      DPDK runtime directory (/var/run/dpdk/uroce-PID) or hugepage file.
#   2. `uroce link del` of the namespace's last device leaves nothing of
#      the namespace's run tree.
#   3. A namespace deleted (`ip netns del`) with a device in it and no
#      program: the device's daemon removes the device and leaves.
#   4. `uroce link add` refuses a run base another user owns or may write,
#      and makes nothing in it.
#   leftovers.sh BUILD_DIR
# Exit 77 (skip) without root or network namespaces.
set -u

build=${1:?usage: leftovers.sh BUILD_DIR}
UROCE=$build/tools/uroce
export UROCE

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }
command -v ibv_rc_pingpong >/dev/null && command -v ibv_devinfo >/dev/null ||
	{ echo "SKIP: needs ibverbs-utils"; exit 77; }
[ -x "$UROCE" ] || { echo "FAIL: $UROCE is missing (build first)"; exit 1; }
# shellcheck source=../../tools/netns.sh
source "$(dirname "$0")/../../tools/netns.sh"

# our own names (lf*, 10.62.9.0/24): nothing else's namespaces are touched
P=lf$(($$ % 100000))
NET=10.62.9
port0=$((20000 + RANDOM % 20000))
fails=0
pids=()

# shellcheck disable=SC2317 # invoked by the traps
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in "${pids[@]}"; do
		kill -9 "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	ur_pair_down "$P"
	ip netns del "$P-c" 2>/dev/null
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

if ! ur_pair_up "$P" "$NET" 1500 >/dev/null 2>&1; then
	echo "FAIL: setting up the namespaces and devices"
	exit 1
fi
mapfile -t env_a < <(ip netns exec "$P-a" "$UROCE" env | sed -n 's/^export //p')
in_a=(ip netns exec "$P-a" env "${env_a[@]}")
rundir=$(ip netns exec "$P-a" "$UROCE" env | sed -n 's|^export SYSFS_PATH=\(.*\)/sys$|\1|p')
dpdk_dir=/var/run/dpdk # EAL's runtime directories, for root

# ---- 1. 100 programs, 50 clean exits and 50 SIGKILLs ----
t0=$(date +%s.%N)
for ((batch = 0; batch < 5; batch++)); do
	batch_pids=()
	for ((i = 0; i < 10; i++)); do
		"${in_a[@]}" ibv_devinfo -d uroce0 >/dev/null 2>&1 &
		batch_pids+=($!)
		pids+=($!)
	done
	for pid in "${batch_pids[@]}"; do
		wait "$pid" || { echo "FAIL: ibv_devinfo on uroce0 (pid $pid)"; fails=$((fails + 1)); }
	done
done
echo "     50 clean exits: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" 
killed=0
for ((batch = 0; batch < 5; batch++)); do
	batch_pids=()
	for ((i = 0; i < 10; i++)); do
		"${in_a[@]}" ibv_rc_pingpong -d uroce0 -g 1 -p $((port0 + batch * 10 + i)) \
			>/dev/null 2>&1 &
		batch_pids+=($!)
		pids+=($!)
	done
	# each has opened the device (EAL up) once it listens for its client
	for ((w = 0; w < 100; w++)); do
		up=$(ip netns exec "$P-a" ss -ltnH 2>/dev/null | wc -l)
		[ "$up" -ge 10 ] && break
		sleep 0.1
	done
	kill -9 "${batch_pids[@]}" 2>/dev/null
	wait "${batch_pids[@]}" 2>/dev/null
	killed=$((killed + (up > 10 ? 10 : up)))
	echo "     batch $batch: $up listening when killed, after $w tenths of a second" 
done
left=()
for pid in "${pids[@]}"; do
	for f in "$dpdk_dir/uroce-$pid" /dev/hugepages/uroce-"$pid"*; do
		[ -e "$f" ] && left+=("$f")
	done
done
if [ "$killed" -lt 50 ]; then
	echo "FAIL: only $killed of 50 servers were listening (had the device open) when killed"
	fails=$((fails + 1))
elif [ ${#left[@]} -ne 0 ]; then
	echo "FAIL: ${#left[@]} DPDK files of 100 programs left behind: ${left[*]:0:5}"
	fails=$((fails + 1))
else
	echo "ok   100 programs (50 exited, 50 killed with SIGKILL holding the device) left nothing in $dpdk_dir ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
fi

# ---- 2. link del of the last device leaves nothing of the run tree ----
for s in a b; do
	dir=$(ip netns exec "$P-$s" "$UROCE" env | sed -n 's|^export SYSFS_PATH=\(.*\)/sys$|\1|p')
	ip netns exec "$P-$s" "$UROCE" link del uroce0
	if [ -e "$dir" ]; then
		echo "FAIL: after link del, $dir holds: $(cd "$dir" && find . | tr '\n' ' ')"
		fails=$((fails + 1))
	else
		echo "ok   link del in $P-$s: $dir is gone"
	fi
done
[ -n "$rundir" ] || { echo "FAIL: no run directory"; fails=$((fails + 1)); }

# ---- 3. a namespace deleted with its device in it (no link del) ----
# The daemon and the keeper keep the namespace alive once its name is gone;
# the daemon notices and removes the device, so the namespace and its veth go.
ns=$P-c
if ip netns add "$ns" && ip -n "$ns" link add "${P}c0" type veth peer name "${P}c1" &&
	ip -n "$ns" link set "${P}c0" up && ip -n "$ns" link set "${P}c1" up &&
	ip netns exec "$ns" "$UROCE" link add uroce0 netdev "${P}c0" >/dev/null; then
	dir=$(ip netns exec "$ns" "$UROCE" env | sed -n 's|^export SYSFS_PATH=\(.*\)/sys$|\1|p')
	for ((w = 0; w < 50; w++)); do
		dpids=$(ip netns pids "$ns" | tr '\n' ' ')
		[ "$(wc -w <<<"$dpids")" -ge 2 ] && break # the supervisor and the keeper
		sleep 0.1
	done
	ip netns del "$ns"
	for ((w = 0; w < 100; w++)); do
		alive=$(for pid in $dpids; do kill -0 "$pid" 2>/dev/null && echo "$pid"; done)
		[ -z "$alive" ] && [ ! -e "$dir" ] && break
		sleep 0.1
	done
	if [ -z "$dpids" ]; then
		echo "FAIL: no daemon ran in $ns"
		fails=$((fails + 1))
	elif [ -n "$alive" ] || [ -e "$dir" ]; then
		echo "FAIL: 10 s after ip netns del: pids $alive of $dpids alive, $dir $([ -e "$dir" ] && echo holds "$(cd "$dir" && find . | head -5 | tr '\n' ' ')")"
		fails=$((fails + 1))
	else
		echo "ok   ip netns del with a device in it: its daemon (pids $dpids) removed it and left, in $w tenths of a second; $dir is gone"
	fi
else
	echo "FAIL: setting up $ns"
	fails=$((fails + 1))
fi
ip netns del "$ns" 2>/dev/null

# ---- 4. a run base another user made first (anyone may write /dev/shm) ----
fake=$(mktemp -d)
for how in "chown 65534" "chmod 777"; do
	$how "$fake"
	if ip netns exec "$P-a" env UROCE_RUN_DIR="$fake" "$UROCE" link add uroce1 \
		netdev "${P}a0" >"$fake.out" 2>&1; then
		echo "FAIL: link add took a run base after $how"
		fails=$((fails + 1))
	elif ! grep -q "not a directory only we may write" "$fake.out"; then
		echo "FAIL: link add after $how: $(head -2 "$fake.out")"
		fails=$((fails + 1))
	elif [ -n "$(ls -A "$fake")" ]; then
		echo "FAIL: link add refused the run base after $how but left $(ls -A "$fake") in it"
		fails=$((fails + 1))
	else
		echo "ok   link add refuses a run base after $how"
	fi
	chown 0 "$fake"
	chmod 700 "$fake"
done
rm -rf "$fake" "$fake.out"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
