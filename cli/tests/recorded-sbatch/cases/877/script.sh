#!/bin/bash
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --error=%x.err
# SBATCH --mem=1T (not a directive: space)
#SBATCH --open-mode=append
#SBATCH --qos normal
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
