#!/bin/bash
# Fuzz the frame parser and the engine's receive path with libFuzzer.
#
#   test/fuzz/run.sh [BUILD_DIR [SECONDS]]
#
# Configures BUILD_DIR (default build-fuzz) as a clang build with -Dfuzz=true
# if it is not one yet, builds the targets, generates the seed corpus from
# test/data/rxe/*.pcap, test/data/cm/*.pcap and from `uroce-lab sim --pcap` captures, replays the
# inputs that once failed, test/fuzz/regressions/<target>/* (with
# FUZZ_RX_STRICT=1), then runs each target for SECONDS (default 60).
# Prints executions and coverage per target; exits 1 on
# any crash, leak, sanitizer report or failed check, 77 (skip) when clang or
# libFuzzer's runtime is missing. New corpus entries accumulate in
# BUILD_DIR/fuzz-corpus/<target>, crashes land in BUILD_DIR/fuzz-artifacts.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
bdir=${1:-$src/build-fuzz}
secs=${2:-60}
targets=(frame rx)
declare -A max_len=([frame]=9216 [rx]=16384)

skip() {
	echo "fuzz: SKIP: $*"
	exit 77
}

command -v clang >/dev/null || skip "clang is not installed"
command -v meson >/dev/null && command -v ninja >/dev/null || skip "meson or ninja missing"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$tmp/t.c"
clang -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" >/dev/null 2>&1 ||
	skip "clang cannot link -fsanitize=fuzzer,address,undefined (install libclang-rt-14-dev)"

# A clang build directory with the fuzz targets.
mkdir -p "$(dirname "$bdir")"
bdir=$(cd "$(dirname "$bdir")" && pwd)/$(basename "$bdir")
if [ ! -f "$bdir/build.ninja" ]; then
	echo "fuzz: configuring $bdir (clang, -Dfuzz=true)"
	# no LTO: this build finds bugs, not speed, and LTO only slows its build
	CC=clang meson setup "$bdir" "$src" -Dfuzz=true -Db_lto=false >"$tmp/setup.log" 2>&1 ||
		{ cat "$tmp/setup.log"; exit 1; }
elif ! grep -q 'fuzz_rx' "$bdir/build.ninja"; then
	meson configure "$bdir" -Dfuzz=true >"$tmp/setup.log" 2>&1 ||
		{ cat "$tmp/setup.log"; echo "fuzz: $bdir is not a clang build: use another directory"; exit 1; }
fi
ninja -C "$bdir" test/fuzz_frame test/fuzz_rx test/fuzz_seeds >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log"; exit 1; }

# Seeds: the Soft-RoCE captures and a few simulator runs, regenerated every time.
corpus=$bdir/fuzz-corpus
art=$bdir/fuzz-artifacts
rm -rf "$corpus/seed-frame" "$corpus/seed-rx" "$corpus/pcap"
mkdir -p "$corpus/seed-frame" "$corpus/seed-rx" "$corpus/pcap" "$art"
for t in "${targets[@]}"; do mkdir -p "$corpus/$t"; done
if ninja -C "$bdir" tools/uroce-lab >"$tmp/uroce.log" 2>&1; then
	# op, message size, MTU, extra options: short runs that cover every opcode,
	# both IP versions, losses in both directions, retransmissions and
	# selective repeat
	while read -r op size mtu extra; do
		# shellcheck disable=SC2086
		"$bdir/tools/uroce-lab" sim --quiet --op "$op" --msg-size "$size" --mtu "$mtu" \
			--messages 6 --rate 10G --rtt 4us $extra \
			--pcap "$corpus/pcap/sim-$op-$size-$mtu${extra//[ -]/_}.pcap" >/dev/null 2>&1 ||
			echo "fuzz: uroce-lab sim --op $op $extra failed; its seeds are missing"
	done <<-EOF
		write 3000 1024 --loss 0.1
		write-imm 1500 1024
		send 2500 1024 --loss 0.1 --seed 3
		send-imm 100 256
		read 5000 1024 --loss-back 0.2
		fetch-add 8 1024
		cmp-swap 8 1024 --loss 0.2
		write 600 512 --ipv6
		send 4096 4096 --dup 0.2 --reorder 0.2:3
		write 20000 1024 --mode sr --loss 0.05
		send 5000 1024 --mode sr --loss 0.1 --seed 2
		read 9000 1024 --mode sr --loss 0.1 --loss-back 0.1
	EOF
else
	echo "fuzz: tools/uroce-lab did not build; seeds come from the Soft-RoCE captures only"
fi
"$bdir/test/fuzz_seeds" "$corpus/seed-frame" "$corpus/seed-rx" "$src"/test/data/rxe/*.pcap \
	"$src"/test/data/cm/*.pcap \
	"$corpus"/pcap/*.pcap | tail -1

# a small quarantine: the fixture allocates afresh for every input, and 16 MB
# still spans many inputs (the default 256 MB halves fuzz_rx's speed in page faults)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=16:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fail=0
for t in "${targets[@]}"; do
	bin=$bdir/test/fuzz_$t
	log=$bdir/fuzz-$t.log
	# Inputs that failed before: each must pass now, protocol findings included.
	: >"$log.regressions"
	nreg=0
	for r in "$src/test/fuzz/regressions/$t"/*; do
		[ -f "$r" ] || continue
		nreg=$((nreg + 1))
		if ! FUZZ_RX_STRICT=1 "$bin" "$r" >"$tmp/replay.log" 2>&1; then
			echo "fuzz_$t: FAIL: regression input $(basename "$r") still fails:"
			grep -E 'fuzz_rx: |fuzz_frame: |ERROR:|SUMMARY|^ +#[0-9]+ .*(/transport/|/test/fuzz/)' \
				"$tmp/replay.log" | sed 's/ (\/.*BuildId: [0-9a-f]*)//; s/^/    /' | head -20
			fail=1
		fi
		cat "$tmp/replay.log" >>"$log.regressions"
	done
	[ $nreg -eq 0 ] || echo "fuzz_$t: replayed $nreg regression inputs"

	rc=0
	"$bin" -max_total_time="$secs" -max_len="${max_len[$t]}" -timeout=10 \
		-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
		-artifact_prefix="$art/$t-" "$corpus/$t" "$corpus/seed-$t" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
	cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last")
	ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
	corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9A-Za-z]+).*/\1/p' <<<"$last")
	echo "fuzz_$t: ${execs:-?} executions in ${secs} s (${rate:-?}/s), cov ${cov:-?} ft ${ft:-?}, corpus ${corp:-?}"
	# protocol findings fuzz_rx reports without stopping (FUZZ_RX_STRICT=1 makes them crashes)
	grep -h 'protocol finding' "$log" "$log.regressions" 2>/dev/null | sort -u | sed "s/^/  /" || true
	if [ $rc -ne 0 ]; then
		echo "fuzz_$t: FAIL (exit $rc), log $log:"
		grep -vE '^#[0-9]+' "$log" | tail -60
		ls -1 "$art/$t-"* 2>/dev/null | sed 's/^/  crashing input: /' || true
		echo "  save it as test/fuzz/regressions/$t/<name> once understood"
		fail=1
	fi
done
exit $fail
