#!/bin/bash
#SBATCH -Aphysics
#SBATCH -wn1


# SBATCH --mem=1T (not a directive: space)

#SBATCH --ntasks-per-core=2

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
