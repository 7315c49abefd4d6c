#!/bin/bash
#SBATCH -b 2031-02-03
#SBATCH --account=bio
## note: #SBATCH -n 999 is not a directive here
#SBATCH --deadline=2031-01-01T00:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
