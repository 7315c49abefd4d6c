#!/bin/bash
#SBATCH --array 0-15
#SBATCH --exclusive user
#SBATCH --mail-type END
#SBATCH -D /tmp
#SBATCH --gpus-per-node 2
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
