#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -H
#SBATCH -ee-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
