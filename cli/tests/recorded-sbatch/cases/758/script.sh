#!/bin/bash
#SBATCH -J "a,b"
## note: #SBATCH -n 999 is not a directive here
#SBATCH --requeue
#SBATCH --cpus-per-gpu=4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
