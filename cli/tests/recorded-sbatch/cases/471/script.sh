#!/bin/bash
#SBATCH -t 10#ten
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
