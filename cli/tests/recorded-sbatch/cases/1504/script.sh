#!/bin/bash
#SBATCH --mem-per-cpu=1G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
