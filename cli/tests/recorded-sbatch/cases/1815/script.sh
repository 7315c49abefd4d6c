#!/bin/bash
#SBATCH --ntasks 16
#SBATCH --mem 16g
#SBATCH --time-min 45

#SBATCH -D /tmp
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
