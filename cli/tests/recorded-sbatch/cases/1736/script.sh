#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mincpus=8
#SBATCH -b 2031-02-03
#SBATCH --kill-on-invalid-dep=yes
#PBS -l nodes=2:ppn=2
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
