#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres=gpu:a100:2

#SBATCH -n 130
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
