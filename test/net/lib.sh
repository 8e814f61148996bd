# shellcheck shell=bash
# The start every namespace test shares. Source it with the build directory:
#   source "$(dirname "$0")/lib.sh" "$1"
# It sets $build and exports UROCE, sources tools/netns.sh, exits 77 (skip)
# without root or network namespaces, and gives ur_need, ok, bad and $fails.
build=${1:?usage: $(basename "$0") BUILD_DIR}
export UROCE=$build/tools/uroce
# shellcheck source=tools/netns.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../tools/netns.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: no network namespaces"; exit 77; }

# ur_need PACKAGE PROGRAM...: skip the test unless every PROGRAM is installed.
ur_need() {
	local pkg=$1 b
	shift
	for b in "$@"; do
		command -v "$b" >/dev/null || { echo "SKIP: no $b ($pkg)"; exit 77; }
	done
}

fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
