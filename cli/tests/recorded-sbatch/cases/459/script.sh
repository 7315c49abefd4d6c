#!/bin/bash
#SBATCH  --job-name=twospace
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
