#!/bin/bash
#SBATCH --mem=2T
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
