#!/bin/sh
# reuse.sh GO GAVEL DATA N: the reuse and rescore benchmark of make bench.
# It generates N CRM rollouts once (DATA/rollouts.parquet, seed 1) and
# builds a second gavel whose VER-002 has its Version raised (go build
# -overlay with a copy of verifiers/crm/crm.go: the same code, a new
# fingerprint for one of the five verifiers). Then, back to back, it times
# a full grade, grade --reuse of it with nothing changed (the parts are
# copied whole), grade --reuse with VER-002 changed (the row path: the
# other verifiers' rows are taken undecoded), and gavel rescore of the full
# run with one formula unchanged (the parts are copied) and with all five
# changed, and prints one Markdown row per case: wall seconds, CPU
# seconds (user + system, from GNU time) and the ratio the target is
# stated in, against the full grade of the same run.
set -eu
go=$1 gavel=$2 data=$3 n=$4
time=/usr/bin/time
[ -x "$time" ] || { echo "reuse.sh: needs GNU time at $time" >&2; exit 1; }
mkdir -p "$data"
if [ ! -f "$data/rollouts.parquet" ]; then
	"$gavel" gen --quiet --out "$data/rollouts.parquet" --rollouts "$n" --seed 1 >/dev/null
fi
# The second Version: field of verifiers/crm/crm.go is VER-002's.
awk '/Version: 1,/ && ++k == 2 { sub(/Version: 1,/, "Version: 2,") } { print }' verifiers/crm/crm.go >"$data/crm.go"
grep -c 'Version: 2,' "$data/crm.go" >/dev/null || { echo "reuse.sh: no Version to raise in verifiers/crm/crm.go" >&2; exit 1; }
printf '{"Replace":{"%s":"%s"}}\n' "$(pwd)/verifiers/crm/crm.go" "$(cd "$data" && pwd)/crm.go" >"$data/overlay.json"
CGO_ENABLED=0 "$go" build -trimpath -ldflags="-s -w" -overlay "$data/overlay.json" -o "$data/gavel-ver002" ./cmd/gavel # as make build
echo '{"VER-001": "fraction"}' >"$data/reward-same.json"
echo '{"VER-001": "all", "VER-002": "all", "VER-003": "all", "VER-004": "all", "VER-006": "all"}' >"$data/reward-all.json"

# run NAME CMD...: times CMD (exit status 3, rows in error, is expected),
# and sets wall and cpu.
run() {
	name=$1
	shift
	rm -rf "$data/$name"
	$time -f "%e %U %S" -o "$data/time.txt" "$@" >/dev/null 2>"$data/err.txt" || [ $? -eq 3 ] ||
		{ cat "$data/err.txt" >&2; exit 1; }
	# shellcheck disable=SC2046
	set -- $(tail -n 1 "$data/time.txt") # after GNU time's note of the exit status
	wall=$1 cpu=$(echo "$2 + $3" | bc)
}
ratio() { echo "scale=3; $1 / $2" | bc; }

run full "$gavel" grade --quiet --out "$data/full" "$data/rollouts.parquet"
full_wall=$wall full_cpu=$cpu
echo "| case | rollouts | wall s | CPU s | wall / full | CPU / full | target |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
echo "| grade (full) | $n | $wall | $cpu | 1 | 1 | |"
run same "$gavel" grade --quiet --out "$data/same" --reuse "$data/full" "$data/rollouts.parquet"
echo "| grade --reuse, nothing changed | $n | $wall | $cpu | $(ratio "$wall" "$full_wall") | $(ratio "$cpu" "$full_cpu") | wall <= 0.20 |"
run one "$data/gavel-ver002" grade --quiet --out "$data/one" --reuse "$data/full" "$data/rollouts.parquet"
echo "| grade --reuse, VER-002 changed | $n | $wall | $cpu | $(ratio "$wall" "$full_wall") | $(ratio "$cpu" "$full_cpu") | wall <= 0.60 |"
run rescore-same "$gavel" rescore "$data/full" --reward "$data/reward-same.json" --out "$data/rescore-same"
echo "| rescore, formulas unchanged | $n | $wall | $cpu | $(ratio "$wall" "$full_wall") | $(ratio "$cpu" "$full_cpu") | wall <= 0.20 (5x) |"
run rescore-all "$gavel" rescore "$data/full" --reward "$data/reward-all.json" --out "$data/rescore-all"
echo "| rescore, all five formulas changed | $n | $wall | $cpu | $(ratio "$wall" "$full_wall") | $(ratio "$cpu" "$full_cpu") | wall <= 0.20 (5x) |"
