#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mail-type END
#SBATCH --cpus-per-task 8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
