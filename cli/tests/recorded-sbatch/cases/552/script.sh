#!/bin/bash
#SBATCH -b2031-02-03
#SBATCH --time 30
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
