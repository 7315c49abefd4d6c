#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH --kill-on-invalid-dep yes
#SBATCH -d afterok:{P1}+5
#SBATCH --gpus-per-node=1g.10gb:2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --reservation=nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
