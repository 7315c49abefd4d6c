#!/bin/bash
#SBATCH --export=NONE
#PBS -v A=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
