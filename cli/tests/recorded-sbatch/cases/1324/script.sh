#!/bin/bash
#SBATCH --mem-per-gpu=1024
#SBATCH --error %x.err
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
