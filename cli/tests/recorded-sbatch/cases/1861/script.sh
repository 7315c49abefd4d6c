#!/bin/bash
#SBATCH -i in-%j.txt
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks 65
#SBATCH --mem-per-cpu=256
#SBATCH --gres=gpu:1g.10gb:2
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
