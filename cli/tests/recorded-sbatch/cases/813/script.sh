#!/bin/bash
#SBATCH --qos=normal
#SBATCH --time-min 1:00:00
#SBATCH -o%A_%a.out
#SBATCH --array=0-15
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
