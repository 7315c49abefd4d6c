#!/bin/bash
#SBATCH -G a100:5
#SBATCH --mem=512
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
