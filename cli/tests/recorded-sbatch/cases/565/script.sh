#!/bin/bash
#SBATCH --output o-%j.out

#SBATCH --exclusive=user
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
