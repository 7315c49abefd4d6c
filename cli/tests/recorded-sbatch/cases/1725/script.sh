#!/bin/bash
#SBATCH -n 3

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
