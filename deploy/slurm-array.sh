#!/usr/bin/env bash
# gavel on Slurm: grade a rollout archive with an array of N tasks, then join
# their results with one `gavel commit` that runs after every task ended.
#
#   jobid=$(sbatch --parsable slurm-array.sh)
#   sbatch --dependency=afterok:$jobid --wrap 'gavel commit /shared/results/nightly'
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

N=16   # the number of tasks in --array
status=0
srun gavel grade --shard "auto/$N" --resume --quiet --workers "$SLURM_CPUS_PER_TASK" \
  --out /shared/results/nightly /shared/rollouts/ || status=$?
# Exit status 3 means the run completed and some rows have status error:
# their rows are written, so the task succeeded.
if [ "$status" -eq 3 ]; then status=0; fi
exit "$status"
