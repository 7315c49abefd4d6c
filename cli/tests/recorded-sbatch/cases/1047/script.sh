#!/bin/bash
#SBATCH --gpus-per-node=a100:1
#SBATCH --signal B:TERM
#SBATCH --cpus-per-gpu 2
#SBATCH --reservation=nosuchresv
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
