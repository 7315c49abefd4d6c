#!/bin/bash
#SBATCH --dependency=singleton
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
