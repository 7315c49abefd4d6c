#!/bin/bash
#SBATCH --dependency=afterok:{P1}
#SBATCH --mem=0
#SBATCH --cpus-per-gpu=2
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
