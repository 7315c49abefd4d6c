#!/bin/bash
#SBATCH -b 2031-02-03
#SBATCH -N2
#SBATCH -H
#SBATCH --ntasks-per-node 2
## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
