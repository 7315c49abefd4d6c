#!/bin/bash
#SBATCH --open-mode=append
#SBATCH --exclude=n[3-4]
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
