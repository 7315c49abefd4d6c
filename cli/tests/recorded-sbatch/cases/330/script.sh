#!/bin/bash
#SBATCH -p debug
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
