#!/bin/bash
#SBATCH --ntasks-per-node 1

#SBATCH --cpus-per-t 2
#SBATCH --dependency=after:{P4}+3
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
