#!/bin/bash
#SBATCH --tim 15
#SBATCH --export=NONE
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
