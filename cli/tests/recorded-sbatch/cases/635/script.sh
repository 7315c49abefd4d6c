#!/bin/bash
#SBATCH -c2

#SBATCH --mem 4G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
