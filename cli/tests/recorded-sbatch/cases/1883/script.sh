#!/bin/bash
#SBATCH -J a,b

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
