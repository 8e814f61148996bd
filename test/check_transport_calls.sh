#!/bin/bash
# The transport's files call down, never back: no file of transport/ calls a
# function of another file that calls one of its own, except the requester
# and the completer (they rewind and retire each other's WQEs, as rxe's
# rxe_req.c and rxe_comp.c do). Read from the static library's symbols.
# usage: check_transport_calls.sh path/to/libur_transport.a
set -u
lib=${1:?usage: $(basename "$0") libur_transport.a}
allowed="completer.c requester.c"
command -v nm >/dev/null || { echo "SKIP: no nm"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# "object symbol" for every function defined, and for every one used
# (meson makes thin archives: nm names each member by its path; keep "x.c")
file_of='{n = split($1, p, ":"); f = p[n - 1]; sub(/.*\//, "", f); sub(/\.o$/, "", f)}'
nm -A --defined-only "$lib" | awk "$file_of"' $2 == "T" {print f, $3}' | sort -u >"$tmp/defs"
nm -A --undefined-only "$lib" | awk "$file_of"' {print f, $NF}' | sort -u >"$tmp/uses"
# object -> object edges
awk 'NR == FNR {def[$2] = $1; next} ($2 in def) && def[$2] != $1 {print $1, def[$2]}' \
	"$tmp/defs" "$tmp/uses" | sort -u >"$tmp/edges"
[ -s "$tmp/defs" ] || { echo "FAIL: no symbols read from $lib"; exit 1; }
fail=0
while read -r a b; do
	[[ "$a" < "$b" ]] || continue
	grep -qx "$b $a" "$tmp/edges" || continue
	[ "$a $b" = "$allowed" ] && continue
	echo "FAIL: $a and $b call each other:"
	awk -v a="$a" -v b="$b" 'NR == FNR {def[$2] = $1; next}
		($1 == a && def[$2] == b) || ($1 == b && def[$2] == a) {print "  " $1 " -> " $2}' \
		"$tmp/defs" "$tmp/uses"
	fail=1
done <"$tmp/edges"
[ $fail -eq 0 ] && echo "transport calls: $(wc -l <"$tmp/edges") edges between $(cut -d' ' -f1 "$tmp/defs" | sort -u | wc -l) files, none back but requester <-> completer"
exit $fail
