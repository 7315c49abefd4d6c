#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -c 2
#SBATCH --dependency=afterany:{P1}:{P3}
#SBATCH --comment="random combo"
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
