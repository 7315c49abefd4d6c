#!/bin/bash
#SBATCH -o %A_%a.out
## note: #SBATCH -n 999 is not a directive here
#SBATCH --reservation nosuchresv
#SBATCH -G 2

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
