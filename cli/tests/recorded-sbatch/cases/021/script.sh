#!/bin/bash
#SBATCH --time 90
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
