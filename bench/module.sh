#!/bin/sh
# module.sh GO GAVEL DATA N PAIRS: the benchmark of a gavel built from a
# module of its own (make bench-module, part of make bench). It makes a
# module outside the source tree with `gavel verifier init --gavel`, whose
# main passes the CRM verifiers to cli.Main (what a team does with its
# own), builds it as make build builds gavel, generates N CRM rollouts
# once (DATA/rollouts-N.parquet, seed 1), then grades them PAIRS times with
# each binary, alternating (stock, module, stock, module, ...), and prints
# one Markdown row per binary: median wall seconds and median CPU seconds
# (user + system, GNU time), and the ratio of the module's medians to the
# stock binary's. The target is a wall ratio within 5 %.
set -eu
go=$1 gavel=$2 data=$3 n=$4 pairs=$5
time=/usr/bin/time
[ -x "$time" ] || { echo "module.sh: needs GNU time at $time" >&2; exit 1; }
src=$(pwd)
mkdir -p "$data"
data=$(cd "$data" && pwd)
if [ ! -f "$data/rollouts-$n.parquet" ]; then
	"$gavel" gen --quiet --out "$data/rollouts-$n.parquet" --rollouts "$n" --seed 1 >/dev/null
fi
rm -rf "$data/mod"
"$gavel" verifier init "$data/mod" --module example.com/bench-crm --gavel "$src" >/dev/null
cat >"$data/mod/main.go" <<'GO'
// Command bench-crm is gavel built from a module of its own, with the CRM
// verifiers compiled in.
package main

import (
	"github.com/gavelhq/gavel/cli"
	"github.com/gavelhq/gavel/verifiers/crm"
)

func main() {
	cli.Main(crm.Verifiers()...)
}
GO
(cd "$data/mod" && "$go" mod tidy && CGO_ENABLED=0 "$go" build -trimpath -ldflags='-s -w' -o "$data/gavel-module" .)

# run BIN: grades the rollouts with BIN (exit status 3, rows in error, is
# expected) and appends "wall cpu" to DATA/times-$(basename BIN).
run() {
	rm -rf "$data/out"
	$time -f "%e %U %S" -o "$data/time.txt" "$1" grade --quiet --out "$data/out" "$data/rollouts-$n.parquet" >/dev/null 2>"$data/err.txt" ||
		[ $? -eq 3 ] || { cat "$data/err.txt" >&2; exit 1; }
	tail -n 1 "$data/time.txt" | awk '{ printf "%s %.2f\n", $1, $2 + $3 }' >>"$data/times-$(basename "$1")"
}
rm -f "$data/times-"*
cp "$gavel" "$data/gavel-stock"
run "$data/gavel-stock" # warm the page cache; not counted
rm -f "$data/times-"*
i=0
while [ "$i" -lt "$pairs" ]; do
	run "$data/gavel-stock"
	run "$data/gavel-module"
	i=$((i + 1))
done
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
sw=$(cut -d' ' -f1 "$data/times-gavel-stock" | median) sc=$(cut -d' ' -f2 "$data/times-gavel-stock" | median)
mw=$(cut -d' ' -f1 "$data/times-gavel-module" | median) mc=$(cut -d' ' -f2 "$data/times-gavel-module" | median)
echo "| binary | rollouts | pairs | median wall s | median CPU s | wall / stock | CPU / stock | target |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
echo "| stock gavel | $n | $pairs | $sw | $sc | 1 | 1 | |"
echo "| module's gavel (cli.Main) | $n | $pairs | $mw | $mc | $(awk "BEGIN { printf \"%.3f\", $mw / $sw }") | $(awk "BEGIN { printf \"%.3f\", $mc / $sc }") | wall within 1.05 |"
