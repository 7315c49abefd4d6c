#!/bin/bash
#SBATCH --begin 2030-06-01T12:00
#SBATCH -n 4
#SBATCH --nod 2
#SBATCH --mem-per-cpu=2048K
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
