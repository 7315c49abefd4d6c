#!/bin/bash
#SBATCH -Ga100:5
#SBATCH --nice=5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
