#!/bin/bash
#SBATCH --dependency afterok:{P1}
#SBATCH -t 30:15

# SBATCH --mem=1T (not a directive: space)
#SBATCH -o /scratch/oracle/%u-%j.out
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
