#!/bin/bash
# SBATCH -J spaced
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
