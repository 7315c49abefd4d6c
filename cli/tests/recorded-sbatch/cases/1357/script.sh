#!/bin/bash
#SBATCH -q high

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
