#!/bin/bash
#SBATCH --mincpus=8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
