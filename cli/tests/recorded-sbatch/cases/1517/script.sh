#!/bin/bash

#SBATCH --dependency after:{P4}+3
#SBATCH --mincpus=8
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-node=a100:1
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
