#!/bin/bash
#SBATCH --mincpus 8
#SBATCH --qos=normal
#SBATCH --nice=5
#SBATCH --open-mode=append
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
