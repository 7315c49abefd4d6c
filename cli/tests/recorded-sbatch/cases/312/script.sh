#!/bin/bash
#SBATCH -t 10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
