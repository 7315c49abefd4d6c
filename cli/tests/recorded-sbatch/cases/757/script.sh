#!/bin/bash
#PBS -l walltime=00:30:00
#SBATCH --wckey k1

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
