#!/bin/bash
#SBATCH --gpus-per-node=a100:1
#SBATCH --qos=normal

#SBATCH --oversubscribe

#SBATCH --mem-per-cpu 2048K
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
