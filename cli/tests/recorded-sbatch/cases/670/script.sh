#!/bin/bash
#SBATCH -e e-%j.txt

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
