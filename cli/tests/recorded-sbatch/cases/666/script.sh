#!/bin/bash
#SBATCH --exclude=n[3-4]
#SBATCH --dependency=singleton
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
