#!/bin/bash
#SBATCH -w n1
#SBATCH --no-requeue
#SBATCH --mem-per-gpu 1024
#SBATCH --reservation nosuchresv
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
