#!/bin/bash
#SBATCH --time-min 45

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
