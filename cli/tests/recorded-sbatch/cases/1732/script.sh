#!/bin/bash
#SBATCH -x n1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
