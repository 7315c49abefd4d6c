#!/bin/bash
#SBATCH -b2031-02-03
#SBATCH --exclusive
#SBATCH -J combo
#SBATCH -o /scratch/oracle/%u-%j.out
#SBATCH --gres gpu:a100:2
#SBATCH -t30:15
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
