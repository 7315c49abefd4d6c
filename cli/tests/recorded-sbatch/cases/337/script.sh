#!/bin/bash
#SBATCH --job-name=one
#SBATCH --job-name=two
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
