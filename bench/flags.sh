#!/bin/sh
# flags.sh FLAGSGAVEL DATA N PAIRS: the flags benchmark of make bench.
# It generates N CRM rollouts once (DATA/rollouts.parquet, seed 1) and
# grades them, alternating PAIRS times, with the CRM verifiers and
# --health off (a run without flags) and with the CRM verifiers each
# raising the reward-hacking library's flags (examples/flags) and
# --health on, both by FLAGSGAVEL (bench/cmd/flagsgavel). It prints the
# medians of wall and CPU seconds (user + system, from GNU time) and their
# ratio, the CPU one against the target (at most 1.15).
set -eu
gavel=$1 data=$2 n=$3 pairs=$4
time=/usr/bin/time
[ -x "$time" ] || { echo "flags.sh: needs GNU time at $time" >&2; exit 1; }
mkdir -p "$data"
if [ ! -f "$data/rollouts.parquet" ]; then
	"$gavel" gen --quiet --out "$data/rollouts.parquet" --rollouts "$n" --seed 1 >/dev/null
fi
lib=$(ls examples/flags/*.yaml | paste -sd, -)

# run NAME FLAGS HEALTH: grades the data (exit status 3, rows in error, is
# expected) and appends "wall cpu" to DATA/NAME.times.
run() {
	rm -rf "$data/out-$1"
	GAVEL_BENCH_FLAGS=$2 $time -f "%e %U %S" -o "$data/time.txt" "$gavel" grade --quiet --health "$3" \
		--out "$data/out-$1" "$data/rollouts.parquet" >/dev/null 2>"$data/err.txt" || [ $? -eq 3 ] ||
		{ cat "$data/err.txt" >&2; exit 1; }
	tail -n 1 "$data/time.txt" | awk '{ print $1, $2 + $3 }' >>"$data/$1.times"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rm -f "$data/plain.times" "$data/flags.times"
run plain "" off # warm-up, not counted
rm -f "$data/plain.times"
i=0
while [ "$i" -lt "$pairs" ]; do
	run plain "" off
	run flags "$lib" on
	i=$((i + 1))
done
pw=$(cut -d' ' -f1 "$data/plain.times" | median) pc=$(cut -d' ' -f2 "$data/plain.times" | median)
fw=$(cut -d' ' -f1 "$data/flags.times" | median) fc=$(cut -d' ' -f2 "$data/flags.times" | median)
echo "| run | rollouts | wall s (median) | CPU s (median) |"
echo "| --- | ---: | ---: | ---: |"
echo "| CRM verifiers, --health off | $n | $pw | $pc |"
echo "| with the flags library, --health on | $n | $fw | $fc |"
echo "| ratio | | $(echo "scale=3; $fw / $pw" | bc) | $(echo "scale=3; $fc / $pc" | bc) (target <= 1.15) |"
