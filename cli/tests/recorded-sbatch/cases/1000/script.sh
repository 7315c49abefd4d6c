#!/bin/bash
#SBATCH --output=%%-%j

#SBATCH --nice -3
#SBATCH -pnosuch
#SBATCH -iin-%j.txt
#SBATCH --mem 16g
#SBATCH --account bio
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
