#!/bin/bash
#SBATCH --job-name "quoted name"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
