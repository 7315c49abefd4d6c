#!/bin/bash
#SBATCH --ntasks=0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
