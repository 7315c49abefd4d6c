#!/bin/bash
#SBATCH --reservation nosuchresv
## note: #SBATCH -n 999 is not a directive here

## note: #SBATCH -n 999 is not a directive here
#SBATCH -d afterany:{P5}_1:{P5}_3
#SBATCH -e e-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
