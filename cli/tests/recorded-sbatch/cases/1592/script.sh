#!/bin/bash
#SBATCH --exclusive=user
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-node=1g.10gb:2
## note: #SBATCH -n 999 is not a directive here

cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
