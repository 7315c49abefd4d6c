#!/bin/bash
#SBATCH --gres=gpu:1g.10gb:2
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
