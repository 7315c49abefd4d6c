#!/bin/bash
#SBATCH --mincpus=8
#SBATCH --signal=B:TERM
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
