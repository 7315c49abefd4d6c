#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --open-mode append
#SBATCH --comment="random combo"
#SBATCH -a 2
#SBATCH --exclude=n[3-4]
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
