#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH -o /scratch/oracle/%u-%j.out
#SBATCH --comment="random combo"
#SBATCH -t 1-0
#SBATCH --export=NONE
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
