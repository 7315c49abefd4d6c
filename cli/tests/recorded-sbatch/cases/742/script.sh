#!/bin/bash
#SBATCH --reservation=nosuchresv
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-node 2
#SBATCH --mail-user=a@b.c

#SBATCH --ntasks-per-node=2
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
