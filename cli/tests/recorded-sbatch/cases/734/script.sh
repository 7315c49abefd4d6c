#!/bin/bash
#SBATCH --mem-per-cpu 256
#SBATCH --mincpus=8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
