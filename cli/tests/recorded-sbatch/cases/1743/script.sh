#!/bin/bash
#SBATCH -n 4
#SBATCH --error %x.err
#SBATCH --ntasks-per-n 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
