#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus 1g.10gb:3
#SBATCH --job-name=named
#SBATCH -H
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
