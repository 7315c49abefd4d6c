#!/bin/bash


#SBATCH -n 6
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
