#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem=2048K
#SBATCH --export=COMBO=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
