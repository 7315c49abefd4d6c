#!/bin/bash
#SBATCH --mem=1G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
