#!/bin/bash
#SBATCH --job-name=with=equals
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
