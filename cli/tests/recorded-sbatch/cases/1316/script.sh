#!/bin/bash
#SBATCH --mincpus=8
#SBATCH --mail-type=END
# SBATCH --mem=1T (not a directive: space)
#SBATCH --time-min=45
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
