#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem=512
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mincpus=8
#SBATCH -i in-%j.txt
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
