#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --exclusive user
#SBATCH --export ALL
#SBATCH --mincpus=8

#SBATCH --error=%x.err

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
