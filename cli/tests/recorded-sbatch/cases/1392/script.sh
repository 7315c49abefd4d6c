#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --chdir=/scratch/oracle
#PBS -l walltime=00:30:00

#SBATCH --oversubscribe
# SBATCH --mem=1T (not a directive: space)
#SBATCH --error %x.err
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
