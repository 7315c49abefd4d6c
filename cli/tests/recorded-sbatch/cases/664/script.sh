#!/bin/bash
#SBATCH --time=2:00:00
#SBATCH --gpus-per-task=1

#SBATCH --nice=-3

#SBATCH --gpus-per-node=1g.10gb:2
## note: #SBATCH -n 999 is not a directive here
#SBATCH -p "debug,batch"
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
