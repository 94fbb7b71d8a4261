#!/bin/sh
# turns.sh GAVEL TURNSGEN DATA N PAIRS: the turns benchmark of make bench.
# It generates N chats of 6 to 20 agent turns once (DATA/chats.jsonl,
# bench/cmd/turnsgen) and grades them with --from messages, alternating
# PAIRS times, with bench/turns/last-turn.yaml (three expressions as
# trajectory checks over the last agent turn, credited to it) and
# bench/turns/turn-checks.yaml (the same three as turn checks, on every
# agent turn). It prints the medians of wall and CPU seconds (user +
# system, from GNU time) and their ratio, the CPU one against the target
# (at most 1.5).
set -eu
gavel=$1 gen=$2 data=$3 n=$4 pairs=$5
time=/usr/bin/time
[ -x "$time" ] || { echo "turns.sh: needs GNU time at $time" >&2; exit 1; }
mkdir -p "$data"
if [ ! -f "$data/chats.jsonl" ] || [ "$(wc -l <"$data/chats.jsonl")" -ne "$n" ]; then
	"$gen" -n "$n" -out "$data/chats.jsonl"
fi

# run NAME SPEC: grades the chats and appends "wall cpu" to DATA/NAME.times.
run() {
	rm -rf "$data/out-$1"
	$time -f "%e %U %S" -o "$data/time.txt" "$gavel" grade --quiet --from messages --spec "$2" \
		--out "$data/out-$1" "$data/chats.jsonl" >/dev/null 2>"$data/err.txt" ||
		{ cat "$data/err.txt" >&2; exit 1; }
	tail -n 1 "$data/time.txt" | awk '{ print $1, $2 + $3 }' >>"$data/$1.times"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rm -f "$data/last.times" "$data/turns.times"
run last bench/turns/last-turn.yaml # warm-up, not counted
rm -f "$data/last.times"
i=0
while [ "$i" -lt "$pairs" ]; do
	run last bench/turns/last-turn.yaml
	run turns bench/turns/turn-checks.yaml
	i=$((i + 1))
done
lw=$(cut -d' ' -f1 "$data/last.times" | median) lc=$(cut -d' ' -f2 "$data/last.times" | median)
tw=$(cut -d' ' -f1 "$data/turns.times" | median) tc=$(cut -d' ' -f2 "$data/turns.times" | median)
echo "| run | chats | wall s (median) | CPU s (median) |"
echo "| --- | ---: | ---: | ---: |"
echo "| 3 checks over the last agent turn | $n | $lw | $lc |"
echo "| 3 turn checks on every agent turn | $n | $tw | $tc |"
echo "| ratio | | $(echo "scale=3; $tw / $lw" | bc) | $(echo "scale=3; $tc / $lc" | bc) (target <= 1.5) |"
