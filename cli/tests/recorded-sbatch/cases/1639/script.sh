#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment="combo, with comma"
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gres=gpu:2
#SBATCH --nice=5
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
