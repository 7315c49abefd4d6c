#!/bin/bash
#SBATCH --time=2:00:00
#SBATCH -b2031-02-03
#SBATCH -pdebug,batch
#SBATCH -o /scratch/oracle/%u-%j.out
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
