#!/bin/bash
#SBATCH -d afterany:{P5}
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --time 2:00:00
#SBATCH -q high

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
