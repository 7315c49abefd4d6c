#!/bin/bash
#SBATCH --gpus-per-node=2
## note: #SBATCH -n 999 is not a directive here
#SBATCH -i in-%j.txt
#SBATCH --error %x.err
#SBATCH --deadline=2031-01-01T00:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
