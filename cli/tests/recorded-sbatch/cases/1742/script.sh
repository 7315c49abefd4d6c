#!/bin/bash
#SBATCH --wckey=k1
#SBATCH --exclusive
#SBATCH --mem 0
#SBATCH -o%A_%a.out
## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
