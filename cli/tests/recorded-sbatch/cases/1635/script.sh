#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --ntasks-per-node=2
#SBATCH --array=0-15
#SBATCH --gpus-per-task=1
#SBATCH --time-min=10
#SBATCH --gpus 1g.10gb:3
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
