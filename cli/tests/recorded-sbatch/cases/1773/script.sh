#!/bin/bash
#SBATCH --time 2:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
