#!/bin/bash
#SBATCH --gres=gpu:2
## note: #SBATCH -n 999 is not a directive here
#SBATCH --output=%x-%j.log
#SBATCH -n4
#SBATCH -e e-%j.txt
#SBATCH --mem 1T

cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
