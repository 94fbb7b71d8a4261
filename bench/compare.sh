#!/bin/sh
# compare.sh GAVEL SPLITPARQUET REWARDSGEN DATA N...: the comparison benchmark of
# make bench-compare. For each size N it generates a Parquet dataset once
# (DATA/N/rollouts.parquet), splits a copy into four files, grades three
# runs (a and b from the one file, c from the four files listed in
# reverse: the same rows in another order), all kept and reused, then
# times gavel diff and gavel leaderboard on a against b (aligned) and on a
# against c (not aligned), printing one Markdown row per case: wall
# seconds, CPU seconds and peak RSS from GNU time. A last case times
# gavel leaderboard on a made-up rewards table of N rows over 10,000 tasks
# and 4 models (REWARDSGEN), since gen's datasets hold five tasks.
set -eu
gavel=$1 split=$2 rewardsgen=$3 data=$4
shift 4
time=/usr/bin/time
[ -x "$time" ] || { echo "compare.sh: needs GNU time at $time" >&2; exit 1; }
echo "| case | rollouts | wall s | CPU s | peak RSS MB | disk spilled |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for n in "$@"; do
	d=$data/$n
	mkdir -p "$d/split"
	if [ ! -f "$d/rollouts.parquet" ]; then
		"$gavel" gen --quiet --out "$d/rollouts.parquet" --rollouts "$n" --seed 1 >/dev/null
	fi
	if [ ! -f "$d/split/part-3.parquet" ]; then
		"$split" -in "$d/rollouts.parquet" -n 4 -out "$d/split"
	fi
	for run in a b c; do
		[ -f "$d/run-$run/summary.json" ] && continue
		rm -rf "$d/run-$run"
		if [ $run = c ]; then
			set -- "$d/split/part-3.parquet" "$d/split/part-2.parquet" "$d/split/part-1.parquet" "$d/split/part-0.parquet"
		else
			set -- "$d/rollouts.parquet"
		fi
		"$gavel" grade --quiet --out "$d/run-$run" "$@" >/dev/null || [ $? -eq 3 ]
	done
	for c in "diff aligned:diff --json --quiet:b" "diff not aligned:diff --json --quiet --tmp $d:c" \
		"leaderboard aligned:leaderboard --format json:b" "leaderboard not aligned:leaderboard --format json:c"; do
		name=${c%%:*} rest=${c#*:}
		args=${rest%:*} other=${rest##*:}
		# shellcheck disable=SC2086
		$time -f "%e %U %S %M" -o "$d/time.txt" "$gavel" $args "$d/run-a" "$d/run-$other" >"$d/out.json" 2>"$d/err.txt" || [ $? -eq 1 ]
		read -r wall user sys rss <"$d/time.txt"
		spilled=$(sed -n 's/.*compared in \(.*\) spilled under.*/\1/p' "$d/err.txt")
		echo "| $name | $n | $wall | $(echo "$user + $sys" | bc) | $((rss / 1024)) | ${spilled:--} |"
	done
	if [ ! -f "$d/tasks10k/rewards/part-00000.jsonl.zst" ]; then
		"$rewardsgen" -rows "$n" -tasks 10000 -out "$d/tasks10k"
	fi
	$time -f "%e %U %S %M" -o "$d/time.txt" "$gavel" leaderboard --format json "$d/tasks10k" >"$d/out.json"
	read -r wall user sys rss <"$d/time.txt"
	echo "| leaderboard 10k tasks | $n | $wall | $(echo "$user + $sys" | bc) | $((rss / 1024)) | - |"
done
