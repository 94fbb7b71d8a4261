#!/bin/sh
# make bench-s3: grades one generated Parquet file from local disk and from
# an S3 server on 127.0.0.1 (s3fake, through the AWS SDK), in the same run,
# alternating, and prints rollouts/s of each, their ratio and the GET
# requests per unit.
#   bench/s3bench.sh BIN S3FAKE DATA ROLLOUTS
set -eu
bin=$1 s3fake=$2 data=$3 rollouts=$4
mkdir -p "$data"
file=$data/s3bench-$rollouts.parquet
[ -f "$file" ] || "$bin" gen --out "$file" --rollouts "$rollouts" --seed 1 >/dev/null
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
"$s3fake" -bucket bench -dir "$work/s3" -timeout 2h -addr-file "$work/addr" \
  -put "bench/in/rollouts.parquet=$file" >"$work/s3fake.out" 2>"$work/s3fake.err" &
pid=$!
while [ ! -s "$work/addr" ]; do sleep 0.2; done
export AWS_ENDPOINT_URL=$(cat "$work/addr") AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
rate() { sed -n 's/.*"rows_per_second": \([0-9.]*\).*/\1/p' "$1/summary.json"; }
for round in 1 2; do
  "$bin" grade --quiet --out "$work/local" "$file" >/dev/null || [ $? -eq 3 ]
  echo "round $round local: $(rate "$work/local") rollouts/s"
  "$bin" grade --quiet --out "$work/s3out" s3://bench/in/rollouts.parquet >/dev/null || [ $? -eq 3 ]
  echo "round $round s3:    $(rate "$work/s3out") rollouts/s"
done
units=$(grep -c '"part":' "$work/s3out/manifest.json")
kill -INT $pid; wait $pid || true
gets=$(sed -n 's/^gets \([0-9]*\).*/\1/p' "$work/s3fake.err")
local=$(rate "$work/local"); s3=$(rate "$work/s3out")
echo "ratio s3/local (round 2): $(echo "$s3 $local" | awk '{printf "%.2f", $1/$2}')"
echo "GETs: $gets over 2 runs of $units units: $(echo "$gets $units" | awk '{printf "%.1f", $1/2/$2}') a unit (footer and HEAD included)"
