#!/bin/bash
#SBATCH --comment="it's # here"
#SBATCH --array="0-3,7"
#SBATCH -i in-%j.txt
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus-per-node 1g.10gb:2
## note: #SBATCH -n 999 is not a directive here
#SBATCH --chdir=rel
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
