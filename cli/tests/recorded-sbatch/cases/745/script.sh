#!/bin/bash
#SBATCH --wckey k1
#SBATCH --signal USR1@60
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
