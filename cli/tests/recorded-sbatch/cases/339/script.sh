#!/bin/bash
#SBATCH --job-name=
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
