#!/bin/bash
#SBATCH --cpus-per-gpu 2
#SBATCH --gpus-per-node 2
## note: #SBATCH -n 999 is not a directive here
#SBATCH --open-mode append
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
