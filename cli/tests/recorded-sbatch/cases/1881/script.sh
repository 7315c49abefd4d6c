#!/bin/bash
#SBATCH -dafterany:{P5}
#SBATCH --array="0-3,7"
#SBATCH --nice=-3
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
