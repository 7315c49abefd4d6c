#!/bin/bash
#SBATCH --exclusive
#SBATCH --nice -3

#SBATCH --output=%x-%j.log
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
