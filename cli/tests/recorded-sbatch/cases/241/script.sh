#!/bin/bash
:
#SBATCH -J notread
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
