#!/bin/bash
# transport/ is the portable protocol engine: C11 and libc only. It must
# never include DPDK (rte_*.h) or libibverbs (infiniband/*.h) headers, and
# only dataplane/ may include DPDK, only provider/ libibverbs' provider ABI.
set -u
root=${1:-$(dirname "$0")/..}
fail=0
bad=$(grep -rnE '^\s*#\s*include\s*[<"](rte_|infiniband/|rdma/|dpdk/)' "$root/transport" || true)
if [ -n "$bad" ]; then
	echo "transport/ includes DPDK or verbs headers:"
	echo "$bad"
	fail=1
fi
for dir in provider tools test; do
	[ -d "$root/$dir" ] || continue
	bad=$(grep -rnlE '^\s*#\s*include\s*[<"]rte_' "$root/$dir" --include='*.c' --include='*.h' || true)
	if [ -n "$bad" ]; then
		echo "$dir/ includes DPDK headers (only dataplane/ may):"
		echo "$bad"
		fail=1
	fi
done
[ $fail -eq 0 ] && echo "layering: ok"
exit $fail
