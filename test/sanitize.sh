#!/bin/bash
# The unit and simulator suites under AddressSanitizer and UBSan.
#
#   test/sanitize.sh [BUILD_DIR]
#
# Configures BUILD_DIR (default build-asan) with -Db_sanitize=address,undefined
# once, builds only the transport and simulator libraries and the programs of
# the 'unit' and 'sim' suites (not the provider or the dataplane), and runs
# those suites there with every sanitizer report fatal. Extra arguments after
# BUILD_DIR go to `meson test`.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bdir=${1:-$src/build-asan}
shift || true
suites=(unit sim)

if [ ! -f "$bdir/build.ninja" ]; then
	echo "sanitize: configuring $bdir"
	meson setup "$bdir" "$src" -Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false \
		-Dc_args=-fno-omit-frame-pointer >"$bdir.setup.log" 2>&1 ||
		{ cat "$bdir.setup.log"; exit 1; }
	rm -f "$bdir.setup.log"
fi

# Reconfigure first if a meson.build changed, so the test list below is current.
ninja -C "$bdir" build.ninja >"$bdir/sanitize-build.log" 2>&1 ||
	{ cat "$bdir/sanitize-build.log"; exit 1; }

# The programs those suites run, as ninja targets relative to the build dir.
mapfile -t progs < <(/usr/bin/python3 - "$bdir" "${suites[@]}" <<-'EOF'
	import json, os, sys
	bdir, suites = os.path.realpath(sys.argv[1]), sys.argv[2:]
	with open(os.path.join(bdir, 'meson-info', 'intro-tests.json')) as f:
	    tests = json.load(f)
	with open(os.path.join(bdir, 'meson-info', 'intro-targets.json')) as f:
	    built = {os.path.realpath(n) for t in json.load(f) for n in t['filename']}
	seen = set()
	for t in tests:
	    if not any(s.split(':')[-1] in suites for s in t['suite']):
	        continue
	    # the program, and programs of ours it is given (a script's tool)
	    for arg in t['cmd']:
	        exe = os.path.realpath(os.path.join(bdir, arg))
	        if exe in built and exe not in seen:
	            seen.add(exe)
	            print(os.path.relpath(exe, bdir))
	EOF
)
[ ${#progs[@]} -gt 0 ] || { echo "sanitize: no tests in suites ${suites[*]}"; exit 1; }
ninja -C "$bdir" "${progs[@]}" >"$bdir/sanitize-build.log" 2>&1 ||
	{ cat "$bdir/sanitize-build.log"; exit 1; }
echo "sanitize: built ${#progs[@]} test programs with -fsanitize=address,undefined"

# Any report ends the process with an error (abort, so Check's forked tests see it too).
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=exitcode=23
args=()
for s in "${suites[@]}"; do args+=(--suite "$s"); done
meson test -C "$bdir" --no-rebuild --print-errorlogs "${args[@]}" "$@"
