#!/bin/bash
#SBATCH -w n1
#SBATCH --array=0-15
#SBATCH --exclusive=user
#SBATCH --comment="combo, with comma"
#SBATCH --cpus-per-task=8
#SBATCH -pbatch
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
