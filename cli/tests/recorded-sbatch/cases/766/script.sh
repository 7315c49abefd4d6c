#!/bin/bash
#SBATCH --export="ALL,A=1,B=2"
#SBATCH --requeue
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
