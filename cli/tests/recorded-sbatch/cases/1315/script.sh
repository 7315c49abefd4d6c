#!/bin/bash
#SBATCH -q high
#SBATCH --signal=USR1@60
#SBATCH --reservation nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
