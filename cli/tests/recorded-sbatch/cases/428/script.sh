#!/bin/bash
#SBATCH --exclusive
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
