#!/bin/bash
#SBATCH --qos=normal
#SBATCH -n3
## note: #SBATCH -n 999 is not a directive here

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
