#!/bin/bash
#SBATCH --comment "it's # here"
#SBATCH -Aphysics
#PBS -o pbs.out

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
