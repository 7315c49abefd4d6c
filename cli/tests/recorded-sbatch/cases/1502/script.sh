#!/bin/bash
#SBATCH -o 'with space.out'
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
