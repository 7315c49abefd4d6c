#!/bin/bash
#SBATCH -a 2-6:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
