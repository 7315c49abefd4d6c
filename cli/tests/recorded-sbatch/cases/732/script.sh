#!/bin/bash
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH -H

#SBATCH -iin-%j.txt
#SBATCH -b 2031-02-03
#SBATCH --gpus-per-node 2
# SBATCH --mem=1T (not a directive: space)
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
