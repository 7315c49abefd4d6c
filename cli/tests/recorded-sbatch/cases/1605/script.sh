#!/bin/bash

#SBATCH --exclusive
#SBATCH -t 1-0
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment="combo, with comma"

#SBATCH --dependency=after:{P4}+3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
