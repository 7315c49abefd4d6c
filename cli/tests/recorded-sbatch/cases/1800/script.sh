#!/bin/bash
#SBATCH --cpus-per-gpu=2
#SBATCH --reservation=nosuchresv
#SBATCH --nice=0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
