#!/bin/bash
#SBATCH -J combo
#SBATCH --array=0-99%5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
