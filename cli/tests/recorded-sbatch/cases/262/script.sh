#!/bin/bash
#SBATCH -c4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
