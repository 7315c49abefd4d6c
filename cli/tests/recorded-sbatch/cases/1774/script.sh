#!/bin/bash
#SBATCH -H
#SBATCH --comment "it's # here"
#SBATCH -i in-%j.txt
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
