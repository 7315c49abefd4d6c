#!/bin/bash
#SBATCH -J 'a b' -t 5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
