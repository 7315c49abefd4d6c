#!/bin/bash
#SBATCH --begin=2030-06-01T12:00
#SBATCH --nice 5
#SBATCH -N 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
