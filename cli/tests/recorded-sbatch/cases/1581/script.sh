#!/bin/bash
## note: #SBATCH -n 999 is not a directive here

#SBATCH --comment "random combo"
#SBATCH --kill-on-invalid-dep yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
