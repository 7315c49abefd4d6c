#!/bin/bash
#SBATCH --mail-user=a@b.c

#SBATCH --dependency=afterok:{P1}
#SBATCH --cpus-per-gpu=2
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
