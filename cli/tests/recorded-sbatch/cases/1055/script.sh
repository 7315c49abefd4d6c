#!/bin/bash

#SBATCH --tim=15
#SBATCH --gpus-per-node 1g.10gb:2
#SBATCH --nice=5
## note: #SBATCH -n 999 is not a directive here
#SBATCH --export=NONE
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
