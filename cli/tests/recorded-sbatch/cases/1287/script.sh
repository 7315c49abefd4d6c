#!/bin/bash
#SBATCH -J first
echo "job $SLURM_JOB_ID on $(hostname)"
  #SBATCH -J second
sleep 1
