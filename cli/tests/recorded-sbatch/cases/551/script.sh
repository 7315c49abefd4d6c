#!/bin/bash
#SBATCH -c64
#SBATCH -a 1,3,5
#SBATCH --comment "combo, with comma"
#SBATCH --exclusive
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
