#!/bin/bash
#SBATCH --nodes=2-4
#SBATCH -n 8
## note: #SBATCH -n 999 is not a directive here
#SBATCH --ntasks-per-node 2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --time-min=10
#SBATCH --error %x.err
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
