#!/bin/bash
#SBATCH --export=A='x y'
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
