#!/bin/bash
#SBATCH --array 1,2,3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
