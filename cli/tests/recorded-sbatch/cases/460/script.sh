#!/bin/bash
#SBATCH -J a -J b
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
