#!/bin/bash
# The include graph of the source tree: every `#include "…"` resolved to the file the compiler takes, as
# the Makefile's include paths give it (the including file's folder, then include/, then lib/ for lib's
# files, hvmtrace/ for the command's, tests/vmm/ for the guest payloads). Includes in <…> and names no
# file of the tree holds (system headers) are left out.
#
# tests/tools/include_graph.sh [--edges | --cycles] [ROOT]
#   --cycles  (the default) prints each include cycle as "a -> b -> … -> a"; exits 1 when there is one
#   --edges   prints the graph, one "FROM TO" line per include (paths from ROOT)
# tests/integration/include_layers.sh holds the tree to its layers with it.
set -u
mode=cycles
case "${1:-}" in
--edges | --cycles)
	mode=${1#--}
	shift
	;;
-*)
	echo "usage: $0 [--edges | --cycles] [ROOT]" >&2
	exit 2
	;;
esac
cd "${1:-$(dirname "$0")/../..}" || exit 2

files=$(find lib include hvmtrace plot chanmap tests bench -type f \
	\( -name '*.c' -o -name '*.h' -o -name '*.S' -o -name '*.inc' \) 2>/dev/null | sort)
[ -n "$files" ] || {
	echo "$0: no sources under $(pwd)" >&2
	exit 2
}

# Each file once as "F path" (the tree), then its includes as "I path name".
{
	printf 'F %s\n' $files
	# shellcheck disable=SC2086 # one name per file, none with blanks
	grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files |
		sed -E 's/^([^:]*):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/I \1 \2/'
} | awk -v mode="$mode" '
# a/b/../c/./d -> a/c/d
function normalize(p,    n, parts, out, i, k) {
	n = split(p, parts, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "." || parts[i] == "")
			continue
		if (parts[i] == ".." && k > 0 && out[k] != "..") {
			k--
			continue
		}
		out[++k] = parts[i]
	}
	p = ""
	for (i = 1; i <= k; i++)
		p = p (i > 1 ? "/" : "") out[i]
	return p
}

function dirname(p) {
	return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "."
}

# The file `name`, included from `from`, resolves to, or "" when the tree has none.
function resolve(from, name,    dirs, n, i, c) {
	n = 0
	dirs[++n] = dirname(from)
	dirs[++n] = "include"
	if (from ~ /^lib\//)
		dirs[++n] = "lib"
	if (from ~ /^hvmtrace\//)
		dirs[++n] = "hvmtrace"
	if (from ~ /^tests\/guest\//)
		dirs[++n] = "tests/vmm"
	for (i = 1; i <= n; i++) {
		c = normalize(dirs[i] "/" name)
		if (c in tree)
			return c
	}
	return ""
}

# Depth first; an edge back to a file on the path closes a cycle, printed from that file on.
function visit(u,    list, n, i, v, j, cyc) {
	state[u] = 1
	path[++depth] = u
	n = split(adj[u], list, " ")
	for (i = 1; i <= n; i++) {
		v = list[i]
		if (state[v] == 1) {
			cyc = ""
			for (j = depth; path[j] != v; j--)
				;
			for (; j <= depth; j++)
				cyc = cyc path[j] " -> "
			print cyc v
			cycles++
		} else if (!state[v]) {
			visit(v)
		}
	}
	depth--
	state[u] = 2
}

$1 == "F" { tree[$2] = 1; order[++nfiles] = $2; next }
$1 == "I" {
	to = resolve($2, $3)
	if (to == "" || seen[$2 SUBSEP to]++)
		next
	adj[$2] = adj[$2] (adj[$2] == "" ? "" : " ") to
	if (mode == "edges")
		print $2, to
}
END {
	if (mode != "cycles")
		exit 0
	for (i = 1; i <= nfiles; i++)
		if (!state[order[i]])
			visit(order[i])
	exit cycles > 0
}'
