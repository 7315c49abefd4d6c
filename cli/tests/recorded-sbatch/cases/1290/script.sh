#!/bin/bash
#SBATCH -n4 -c2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
