#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#PBS -N pbsjob
#SBATCH --mem=512
#SBATCH --account=bio
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
