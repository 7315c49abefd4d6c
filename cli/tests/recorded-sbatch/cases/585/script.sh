#!/bin/bash
#SBATCH -n 130
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
