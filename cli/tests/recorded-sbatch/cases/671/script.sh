#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nodelist=n[1-2]
#SBATCH -o /scratch/oracle/%u-%j.out
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
