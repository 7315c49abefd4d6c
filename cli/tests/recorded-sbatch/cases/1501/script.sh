#!/bin/bash
#SBATCH --mem 2G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
