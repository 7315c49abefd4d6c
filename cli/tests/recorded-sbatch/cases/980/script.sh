#!/bin/bash
#SBATCH --ntasks=2 # --mem=9G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
