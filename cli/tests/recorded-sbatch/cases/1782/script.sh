#!/bin/bash
#SBATCH --tim=15
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-node 1g.10gb:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
