#!/bin/bash
#SBATCH --array=0-15:4%2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
