#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -o out-%4j.txt
#SBATCH -b 2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
