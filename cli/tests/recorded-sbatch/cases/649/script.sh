#!/bin/bash
#SBATCH --cpus-per-task=8
#SBATCH --reservation=nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
