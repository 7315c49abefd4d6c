#!/bin/bash
#SBATCH --mail-user a@b.c
#SBATCH --comment "combo, with comma"
#SBATCH -t 0
#SBATCH --dependency afterok:{P1}
#SBATCH --account bio
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
