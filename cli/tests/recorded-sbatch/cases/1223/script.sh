#!/bin/bash
#SBATCH --wckey k1
#SBATCH --signal USR1@60
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mail-type END
# SBATCH --mem=1T (not a directive: space)
#SBATCH --array "0-3,7"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
