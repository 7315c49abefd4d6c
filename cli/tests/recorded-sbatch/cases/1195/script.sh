#!/bin/bash
#SBATCH --mem-per-cpu 1G
#SBATCH --open-mode=append
#SBATCH -N2
#SBATCH -d "afterok:{P2},afternotok:{P3}"
#PBS -l select=2:ncpus=4:mpiprocs=2
#SBATCH --mincpus 8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
