#!/bin/bash
#SBATCH --comment="combo, with comma"
#SBATCH --dependency=after:{P4}+3
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-node=2
#SBATCH --gpus=a100:2
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
