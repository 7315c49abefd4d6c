#!/bin/bash
#SBATCH --time=2:00:00
#SBATCH --gres gpu:1
#SBATCH --export=ALL
#SBATCH --mem-per-cpu=2048K
#SBATCH --time-min=10
#SBATCH -J "two words"
## note: #SBATCH -n 999 is not a directive here
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
