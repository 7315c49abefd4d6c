#!/bin/bash
#SBATCH --wrap=hostname
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
