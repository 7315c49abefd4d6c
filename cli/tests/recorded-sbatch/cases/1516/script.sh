#!/bin/bash
#SBATCH -J script
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
