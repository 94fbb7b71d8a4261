#!/usr/bin/env bash
# gavel on Slurm: grade a rollout archive with an array of N tasks, then join
# their results with one `gavel commit` that runs after every task ended.
#
#   jobid=$(sbatch --parsable slurm-array.sh)
#   sbatch --dependency=afterok:$jobid --wrap 'gavel commit /shared/results/nightly'
#
# The environment may override the defaults below (sbatch exports it to the
# tasks): GAVEL_INPUT (the rollouts: a directory, a glob or files, separated
# by spaces), GAVEL_OUT (the results), GAVEL_SHARDS (N) and GAVEL (the gavel
# binary). Options given to sbatch win over the #SBATCH lines, so
#
#   GAVEL_SHARDS=4 GAVEL_OUT=/shared/results/small sbatch --array=0-3 slurm-array.sh
#
# runs 4 tasks. `make test-slurm` runs this script, unchanged, on a
# single-node Slurm cluster.
#
# Each task runs `gavel grade --shard auto/N`: gavel takes its index from
# SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN, so --array=1-16 works as
# well as --array=0-15. N must equal the number of tasks in --array.
# --resume lets a requeued task (preempted, node failure: see --requeue)
# continue where it stopped. Slurm sends SIGTERM before killing a task at
# its time limit; gavel then writes its manifest and exits 143, and
# resubmitting the array resumes every unfinished shard.
#SBATCH --job-name=gavel-grade
#SBATCH --array=0-15
#SBATCH --cpus-per-task=4
#SBATCH --mem=2G
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --signal=TERM@60
#SBATCH --output=gavel-%A_%a.log
set -euo pipefail

GAVEL=${GAVEL:-gavel}
N=${GAVEL_SHARDS:-16}   # the number of tasks in --array
OUT=${GAVEL_OUT:-/shared/results/nightly}
read -r -a INPUT <<<"${GAVEL_INPUT:-/shared/rollouts/}"
status=0
srun "$GAVEL" grade --shard "auto/$N" --resume --quiet --workers "$SLURM_CPUS_PER_TASK" \
  --out "$OUT" "${INPUT[@]}" || status=$?
# Exit status 3 means the run completed and some rows have status error:
# their rows are written, so the task succeeded.
if [ "$status" -eq 3 ]; then status=0; fi
exit "$status"
