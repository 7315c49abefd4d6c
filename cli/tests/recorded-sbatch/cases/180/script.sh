#!/bin/bash
#SBATCH --output=script.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
