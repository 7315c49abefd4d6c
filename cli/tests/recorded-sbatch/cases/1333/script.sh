#!/bin/bash
#SBATCH -N4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
