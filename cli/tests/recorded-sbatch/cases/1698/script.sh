#!/bin/bash
#SBATCH --cpus-per-t=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
