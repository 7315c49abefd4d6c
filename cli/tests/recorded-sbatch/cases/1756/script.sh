#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-node 1g.10gb:2
#SBATCH --mem-per-cpu 2048K
#SBATCH --exclusive user
#SBATCH --export=NONE
#SBATCH --deadline=2031-01-01T00:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
