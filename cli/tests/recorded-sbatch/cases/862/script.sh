#!/bin/bash
#SBATCH -s
#SBATCH --nice=0
#SBATCH --gpus=a100:2
# SBATCH --mem=1T (not a directive: space)
#PBS -l nodes=2:ppn=2
#SBATCH --gpus-per-task=1
## note: #SBATCH -n 999 is not a directive here
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
