#!/bin/bash

#SBATCH --nodes=2-4
#SBATCH --begin 2030-06-01T12:00
#SBATCH -s
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
