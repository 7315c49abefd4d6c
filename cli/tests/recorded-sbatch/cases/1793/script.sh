#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -N 1
#SBATCH --wckey=k1

#PBS -o pbs.out
#SBATCH -d afterany:{P5}
#SBATCH -ee-%j.txt
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mail-type=END
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
