#!/bin/bash
#SBATCH --export=NONE
#PBS -V
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
