#!/bin/bash
#SBATCH --gres gpu:1g.10gb:2
#SBATCH --mail-type=END
## note: #SBATCH -n 999 is not a directive here

#SBATCH --account=bio
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
