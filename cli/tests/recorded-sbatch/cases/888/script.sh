#!/bin/bash
#SBATCH --tim 15

#SBATCH -p nosuch
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
