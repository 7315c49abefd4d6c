#!/bin/bash
#SBATCH --time-min 10
# SBATCH --mem=1T (not a directive: space)
#SBATCH -d afterany:{P5}_1:{P5}_3
#SBATCH --gres=gpu:a100:2
#SBATCH --mincpus=8
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
