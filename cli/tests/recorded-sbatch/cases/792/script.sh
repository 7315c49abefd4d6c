#!/bin/bash
#SBATCH --mail-type END

#SBATCH --error %x.err

#SBATCH --nice -3
#SBATCH --mem-per-cpu=1G
#SBATCH -p nosuch
#PBS -l walltime=00:30:00

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
