#!/bin/bash
#SBATCH --array 0-15
## note: #SBATCH -n 999 is not a directive here
#SBATCH -n8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
