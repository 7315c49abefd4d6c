#!/bin/bash
#SBATCH -d"singleton,afterok:{P2}"
#SBATCH --kill-on-invalid-dep yes

## note: #SBATCH -n 999 is not a directive here
#SBATCH -n 4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
