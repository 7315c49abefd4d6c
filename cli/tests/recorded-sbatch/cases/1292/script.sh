#!/bin/bash
#SBATCH --job-name='single quoted'
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
