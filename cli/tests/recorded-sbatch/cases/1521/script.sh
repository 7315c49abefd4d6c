#!/bin/bash
#SBATCH --ntasks-per-node 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
