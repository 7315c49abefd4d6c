#!/bin/bash
#SBATCH -p "debug,batch"
#SBATCH -G 2
#SBATCH -a 1,3,5
## note: #SBATCH -n 999 is not a directive here
#SBATCH --output %%-%j
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
