#!/bin/bash
#SBATCH --wckey k1
#SBATCH --mem=512
## note: #SBATCH -n 999 is not a directive here
#BSUB -W 45
#SBATCH --signal USR1@60
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
