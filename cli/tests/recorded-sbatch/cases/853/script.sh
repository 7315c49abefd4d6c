#!/bin/bash
#SBATCH -iin-%j.txt
## note: #SBATCH -n 999 is not a directive here
#SBATCH --cpus-per-t=2
## note: #SBATCH -n 999 is not a directive here
#SBATCH --kill-on-invalid-dep=yes
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
