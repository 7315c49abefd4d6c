#!/bin/bash
#SBATCH -c2
# SBATCH --mem=1T (not a directive: space)
#SBATCH -i in-%j.txt
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-gpu 2
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
