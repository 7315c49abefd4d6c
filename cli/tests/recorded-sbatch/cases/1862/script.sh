#!/bin/bash
#SBATCH -b2031-02-03
#SBATCH -i in-%j.txt
#SBATCH -p "debug,batch"
#SBATCH --mail-type END
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
