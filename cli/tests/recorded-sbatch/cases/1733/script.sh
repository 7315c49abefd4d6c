#!/bin/bash
#SBATCH --comment "combo, with comma"
#SBATCH --gpus-per-node=2
#SBATCH --job-name named
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
