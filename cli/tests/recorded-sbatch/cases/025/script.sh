#!/bin/bash
#SBATCH -J name with spaces
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
