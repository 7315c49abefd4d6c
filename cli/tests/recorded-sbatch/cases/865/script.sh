#!/bin/bash
#SBATCH -a "1,3,5"

#SBATCH --reservation=nosuchresv
#SBATCH --mail-user=a@b.c

#SBATCH --time-min=1:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
