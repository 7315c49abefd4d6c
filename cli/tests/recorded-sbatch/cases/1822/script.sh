#!/bin/bash
#SBATCH --oversubscribe
#SBATCH --output %%-%j
#SBATCH --gpus-per-node a100:1
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-gpu=1024
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment="combo, with comma"
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
