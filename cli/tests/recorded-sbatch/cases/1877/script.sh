#!/bin/bash
#SBATCH --export ALL
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
