#!/bin/bash
#SBATCH -b 2031-02-03
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus=1
#SBATCH --exclusive
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
