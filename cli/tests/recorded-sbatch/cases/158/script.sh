#!/bin/bash
#SBATCH --nice
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
