#!/bin/bash
#SBATCH --export=NONE,A=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
