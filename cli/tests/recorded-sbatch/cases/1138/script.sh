#!/bin/bash
#SBATCH -J x
echo "job $SLURM_JOB_ID on $(hostname)"
#PBS -l walltime=00:07:00
sleep 1
