#!/usr/bin/env bash
# make test-slurm: runs deploy/slurm-array.sh, unchanged, on a real
# single-node Slurm cluster started for the test on 127.0.0.1 only, reading
# its rollouts from and writing its results to an S3 server on 127.0.0.1.
#
# It installs Debian's slurm-wlm and munge when missing, writes a cluster
# configuration for this machine into a temporary directory (no cgroups:
# proctrack/linuxproc, task/none), starts munged, slurmctld and slurmd, and
# an S3 server (internal/cmd/s3fake), uploads the generated rollouts to it,
# and then:
#
#   1. grades the rollouts from the S3 server in one process, into a local
#      directory (the reference);
#   2. submits slurm-array.sh as an array of 4 tasks reading s3://gavel/in/
#      and writing s3://gavel/results, and `gavel commit` of that URL as a
#      job that depends on it (afterok);
#   3. once one task has uploaded some of its parts, suspends it, checks that
#      it is mid-run, and requeues it (scontrol requeue): Slurm kills it and
#      runs it again, and gavel --resume must keep the parts it had uploaded
#      (found by listing the bucket) and upload only the others;
#   4. checks that the commit job ran, downloads the committed results and
#      checks that they equal the reference byte for byte (the timing fields
#      of summary.json aside).
#
# Every daemon the test started, the S3 server too, is stopped by process
# id on exit, whatever the outcome. The whole test is bounded by TEST_SLURM_TIMEOUT seconds.
# TEST_SLURM_KEEP=1 keeps the temporary directory (configuration, logs,
# results), as does a failure.
#
# Needs root (the daemons run as root); skips otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

GAVEL_BIN=${GAVEL_BIN:-$root/bin/gavel}
S3FAKE_BIN=${S3FAKE_BIN:-$root/bin/s3fake}   # the S3 server (internal/cmd/s3fake)
BLOBCP_BIN=${BLOBCP_BIN:-$root/bin/blobcp}   # uploads, lists, downloads (internal/cmd/blobcp)
ROLLOUTS=${TEST_SLURM_ROLLOUTS:-32768}   # 1,024 row groups of 32 rows: 64 units, 16 a task
ROW_GROUP_ROWS=32
TASKS=4
REQUEUED=1                      # the array task that is requeued mid-run
TEST_SLURM_TIMEOUT=${TEST_SLURM_TIMEOUT:-300}
deadline=$((SECONDS + TEST_SLURM_TIMEOUT))

say() { echo "test-slurm: $*"; }
failed=""   # why the test failed, said again after the logs
fail() {
	failed=$*
	echo "test-slurm: FAIL: $*" >&2
	exit 1
}

if [ "$(id -u)" -ne 0 ]; then
	# CI sets GAVEL_REQUIRE_SLURM=1: there the test must run, not skip.
	if [ "${GAVEL_REQUIRE_SLURM:-}" = 1 ]; then
		say "FAIL: needs root (it installs slurm-wlm and munge and runs munged, slurmctld and slurmd as root), and GAVEL_REQUIRE_SLURM=1 forbids skipping"
		exit 1
	fi
	say "SKIP: needs root (it installs slurm-wlm and munge and runs munged, slurmctld and slurmd as root)"
	exit 0
fi
for b in "$GAVEL_BIN" "$S3FAKE_BIN" "$BLOBCP_BIN"; do
	[ -x "$b" ] || fail "$b: no such program (make test-slurm builds them)"
done

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
	! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
	say "installing slurm-wlm and munge"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gavel-slurm.XXXXXX")
chmod 700 "$tmp"
pids=()   # daemons started here, in start order
names=()
jobs=""   # jobs submitted here
unset SLURM_CONF

# stop ends the jobs of the test cluster, then every daemon this script
# started, last started first: SIGTERM, then SIGKILL after 10 seconds.
stop() {
	local status=$? i pid n
	trap - EXIT INT TERM
	if [ "${#pids[@]}" -gt 0 ]; then
		if [ "$status" -ne 0 ]; then
			say "logs in $tmp/log:"
			for f in "$tmp"/log/*; do
				[ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
			done
			if [ -n "$jobs" ]; then
				echo "--- the jobs"
				for j in $jobs; do timeout 5 scontrol show job "$j" 2>&1 || true; done
			fi
			TEST_SLURM_KEEP=1
		fi
		if [ -n "$jobs" ]; then
			timeout 10 scancel $jobs >/dev/null 2>&1 || true
			for ((n = 0; n < 50; n++)); do
				[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
				sleep 0.2
			done
		fi
		for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
			pid=${pids[i]}
			kill -TERM "$pid" 2>/dev/null || continue
			for ((n = 0; n < 50; n++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.2
			done
			if kill -0 "$pid" 2>/dev/null; then
				say "${names[i]} (pid $pid) ignored SIGTERM: SIGKILL"
				kill -KILL "$pid" 2>/dev/null || true
			fi
			wait "$pid" 2>/dev/null || true
		done
	fi
	if [ "${TEST_SLURM_KEEP:-0}" = 1 ]; then
		say "kept $tmp"
	else
		rm -rf "$tmp"
	fi
	[ -z "$failed" ] || echo "test-slurm: FAIL: $failed" >&2
	exit "$status"
}
trap stop EXIT
# A command that fails outside fail (set -e) is named too.
set -E
trap 'rc=$?; [ -n "$failed" ] || failed="line $LINENO: $BASH_COMMAND exited $rc"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME CMD...: starts a daemon in the foreground of a background job
# and records its process id.
start() {
	local name=$1
	shift
	"$@" >"$tmp/log/$name.out" 2>&1 &
	pids+=("$!")
	names+=("$name")
}

# until_true WHAT CMD...: runs CMD every 0.1 second until it succeeds; fails
# the test at the deadline or when a daemon died.
until_true() {
	local what=$1 i
	shift
	until "$@"; do
		for i in "${!pids[@]}"; do
			kill -0 "${pids[i]}" 2>/dev/null || fail "${names[i]} exited (waiting for $what)"
		done
		if [ "$SECONDS" -ge "$deadline" ]; then
			squeue -a -o '%.12i %.9T %.20r %S' 2>&1 || true
			fail "timed out waiting for $what"
		fi
		sleep 0.1
	done
}

# free_port prints a TCP port below the kernel's ephemeral range (so no
# outgoing connection takes it meanwhile) that no socket uses, in any state:
# slurmctld cannot bind a port a closed connection still holds (TIME_WAIT).
free_port() {
	local p low _high
	read -r low _high </proc/sys/net/ipv4/ip_local_port_range
	[ "$low" -gt 12000 ] || low=32768
	for _ in $(seq 100); do
		p=$((10000 + RANDOM % (low - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
			! ss -Htan "( sport = :$p or dport = :$p )" | grep -q .; then
			echo "$p"
			return
		fi
	done
	fail "no free port on 127.0.0.1"
}

mkdir -p "$tmp"/{etc,log,munge,state,spool,run,in,jobs}

# --- munge: a key of its own, a socket in the temporary directory.
if command -v mungekey >/dev/null; then
	mungekey --create --keyfile="$tmp/munge/munge.key"
else
	dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$tmp/munge/munge.key"
start munged munged --foreground --force \
	--key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
	--pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" \
	--seed-file="$tmp/munge/munged.seed"
until_true "munged's socket" test -S "$tmp/munge/munge.socket"

# --- Slurm: this machine as the one node, reached at 127.0.0.1.
hw=$(slurmd -C | head -n 1)
field() { sed -n "s/.*[[:space:]]$1=\([0-9]*\).*/\1/p" <<<"$hw"; }
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
cat >"$tmp/etc/slurm.conf" <<EOF
ClusterName=gavel-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(field CPUs) Boards=$(field Boards) SocketsPerBoard=$(field SocketsPerBoard) CoresPerSocket=$(field CoresPerSocket) ThreadsPerCore=$(field ThreadsPerCore) RealMemory=$(field RealMemory) State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$tmp/etc/slurm.conf
start slurmctld slurmctld -D -i -f "$SLURM_CONF"
start slurmd slurmd -D -N localhost -f "$SLURM_CONF"
node_idle() { [ "$(sinfo -h -n localhost -o %t 2>/dev/null)" = idle ]; }
until_true "the node to be idle" node_idle
say "cluster up: slurmctld on 127.0.0.1:$ctld_port, slurmd on 127.0.0.1:$slurmd_port ($(field CPUs) CPUs)"

# --- Storage: the array reads its inputs from, and writes its results to,
# an S3 server on 127.0.0.1 (s3fake, keeping its bucket under $tmp/s3),
# through the AWS SDK as it would on AWS: AWS_ENDPOINT_URL names the
# server, and sbatch passes the environment to the tasks. The keys are
# dummies; the server checks no signature. blobcp uploads, lists and
# downloads through the same code as gavel.
start s3fake "$S3FAKE_BIN" -bucket gavel -dir "$tmp/s3" -timeout "${TEST_SLURM_TIMEOUT}s" \
	-addr-file "$tmp/s3.addr"
until_true "the S3 server" test -s "$tmp/s3.addr"
export AWS_ENDPOINT_URL
AWS_ENDPOINT_URL=$(cat "$tmp/s3.addr")
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=gavel-test AWS_SECRET_ACCESS_KEY=gavel-test
say "S3 server at $AWS_ENDPOINT_URL"
IN=s3://gavel/in/
OUT=s3://gavel/results
GOT=$tmp/got          # the results as local files, once get_results ran
REF=$tmp/reference    # the reference run's results
# Every call of the S3 server is bounded in time: a request that hangs
# fails the test, naming the command, rather than running into the bound.
put_inputs() { timeout 60 "$BLOBCP_BIN" "$tmp/in" "$IN"; }
# parts_of I prints the parts task I has written so far, each with its size
# and the time the server stored it (to the millisecond): a part graded and
# uploaded again would have a new time.
parts_of() {
	local name size mtime n
	timeout 30 "$BLOBCP_BIN" -l "$OUT/rewards/" | while read -r name size mtime; do
		case $name in part-*.parquet) ;; *) continue ;; esac
		n=${name#part-}
		n=$((10#${n%.parquet}))
		if [ $((n % TASKS)) -eq "$1" ]; then
			echo "$mtime $size $name"
		fi
	done
}
get_results() { timeout 60 "$BLOBCP_BIN" "$OUT" "$GOT"; }

# --- Data, and the reference: one process grading everything from the S3
# server into a local directory.
"$GAVEL_BIN" gen --quiet --out "$tmp/in/rollouts.parquet" --expected "$tmp/expected.json" \
	--rollouts "$ROLLOUTS" --row-group-rows "$ROW_GROUP_ROWS" --seed 7 --bad-share 0.01 >/dev/null
put_inputs
status=0
"$GAVEL_BIN" grade --quiet --out "$REF" "$IN" >"$tmp/log/reference.out" 2>&1 || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 3 ] || fail "reference run: exit $status"
units=$(find "$REF/rewards" -name 'part-*.parquet' | wc -l)
[ "$units" -ge $((TASKS * 4)) ] || fail "the reference has $units parts, want at least $((TASKS * 4))"

# --- The array and the commit that depends on it.
cd "$tmp/jobs"
array=$(GAVEL=$GAVEL_BIN GAVEL_SHARDS=$TASKS GAVEL_INPUT=$IN GAVEL_OUT=$OUT \
	sbatch --parsable --array=0-$((TASKS - 1)) --cpus-per-task=1 --mem=256M \
	--output="$tmp/jobs/gavel-%A_%a.log" "$root/deploy/slurm-array.sh")
jobs=$array
commit=$(sbatch --parsable --dependency="afterok:$array" --output="$tmp/jobs/commit-%j.log" \
	--wrap "$GAVEL_BIN commit $OUT")
jobs="$array $commit"
say "array job $array ($TASKS tasks), commit job $commit"

task=${array}_$REQUEUED
state_of() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
started() { [ "$(state_of "$task")" = RUNNING ] && [ -n "$(parts_of "$REQUEUED")" ]; }
until_true "task $task to write a part" started
scontrol suspend "$task"
until_true "task $task to be suspended" eval '[ "$(state_of "$task")" = SUSPENDED ]'
before=$(parts_of "$REQUEUED")
have=$(wc -l <<<"$before")
want=$(((units - REQUEUED + TASKS - 1) / TASKS))
[ "$have" -lt "$want" ] || fail "task $task finished before it could be stopped ($have of $want parts): more TEST_SLURM_ROLLOUTS"
say "task $task suspended with $have of its $want parts; requeueing it"
scontrol requeue "$task"

requeued() {
	scontrol show job "$task" | grep -q 'Restarts=[1-9]' && [ "$(state_of "$task")" = PENDING ]
}
until_true "task $task to be requeued" requeued
# Slurm delays the start of a requeued job by two minutes (its BeginTime),
# and holds one requeued while suspended (JobHeldAdmin, priority 0): let it
# start now. The hold and the delay may show a moment after the job is
# pending again, so this looks until the task runs, not once.
restarted() {
	local info begin
	info=$(scontrol show job "$task" 2>/dev/null) || return 1
	case $(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info" | head -n 1) in
	RUNNING | COMPLETING | COMPLETED) return 0 ;;
	esac
	if grep -q -e 'Reason=JobHeld' -e 'Priority=0 ' <<<"$info"; then
		scontrol release "$task" 2>/dev/null || true
	fi
	begin=$(sed -n 's/.*BeginTime=\([0-9T:-]*\).*/\1/p' <<<"$info" | head -n 1)
	if grep -q 'Reason=BeginTime' <<<"$info" ||
		{ [ -n "$begin" ] && [ "$(date -d "$begin" +%s 2>/dev/null || echo 0)" -gt "$(date +%s)" ]; }; then
		scontrol update JobId="$task" StartTime=now 2>/dev/null || true
	fi
	return 1
}
until_true "task $task to run again" restarted
done_() {
	local s
	s=$(state_of "$commit")
	case $s in
	COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) return 0 ;;
	esac
	if squeue -h -j "$commit" -o %r 2>/dev/null | grep -q DependencyNeverSatisfied; then
		return 0
	fi
	return 1
}
until_true "the commit job" done_
for t in $(seq 0 $((TASKS - 1))); do
	s=$(state_of "${array}_$t")
	[ "$s" = COMPLETED ] || fail "task ${array}_$t: $s ($(cat "$tmp/jobs/gavel-${array}_$t.log" 2>/dev/null))"
done
s=$(state_of "$commit")
[ "$s" = COMPLETED ] || fail "commit job $commit: ${s:-never ran} ($(cat "$tmp"/jobs/commit-*.log 2>/dev/null))"
cat "$tmp/jobs/commit-$commit.log"

# The requeued task resumed: every part it had uploaded is still there, the
# same object, and the rest of its parts were added.
after=$(parts_of "$REQUEUED")
kept=$(comm -12 <(sort <<<"$before") <(sort <<<"$after") | wc -l)
[ "$kept" -eq "$have" ] || fail "task $task graded again parts it had written before the requeue:
before: $before
after: $after"
[ "$(wc -l <<<"$after")" -eq "$want" ] || fail "task $task has $(wc -l <<<"$after") parts, want $want"

# The committed results equal the reference, file by file, byte for byte,
# except the timing fields of summary.json and the shards' own files.
get_results
files() { (cd "$1" && find . -type f ! -path './_shards/*' | sort); }
diff <(files "$REF") <(files "$GOT") >/dev/null || fail "the files differ from the reference's:
$(diff <(files "$REF") <(files "$GOT"))"
untimed() { grep -v -e '"elapsed_seconds"' -e '"rows_per_second"' "$1"; }
while read -r f; do
	if [ "$f" = ./summary.json ]; then
		cmp -s <(untimed "$REF/$f") <(untimed "$GOT/$f") || fail "$f differs from the reference's"
	else
		cmp -s "$REF/$f" "$GOT/$f" || fail "$f differs from the reference's"
	fi
done < <(files "$REF")
say "PASS: $TASKS tasks, one requeued mid-run, committed results equal the reference ($(files "$REF" | wc -l) files) in ${SECONDS}s"
