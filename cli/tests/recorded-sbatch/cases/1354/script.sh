#!/bin/bash
#SBATCH -w n1

#SBATCH --open-mode=append
#SBATCH --cpus-per-gpu=4
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
