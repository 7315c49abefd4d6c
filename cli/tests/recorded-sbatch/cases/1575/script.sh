#!/bin/bash
#SBATCH --dependency=afterany:{P1}:{P3}
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment="random combo"
#SBATCH -qhigh
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-core 1
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
