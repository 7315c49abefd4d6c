#!/bin/bash
#SBATCH --ntasks 65
#SBATCH --ntasks-per-node 1
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
