#!/bin/bash
#SBATCH --mem=2G # comment
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
