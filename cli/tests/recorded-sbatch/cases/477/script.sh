#!/bin/bash
#SBATCH -J "unterminated
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
