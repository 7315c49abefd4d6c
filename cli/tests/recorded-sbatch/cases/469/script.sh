#!/bin/bash
#SBATCH -J first
exit 0
#SBATCH -J second
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
