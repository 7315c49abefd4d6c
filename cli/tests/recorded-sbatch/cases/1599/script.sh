#!/bin/bash
#SBATCH --time-min 10

#SBATCH --begin=2030-06-01T12:00:00
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
