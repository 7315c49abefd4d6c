#!/bin/bash
#SBATCH -N4
#SBATCH -o out-%4j.txt
#SBATCH -H
#SBATCH --comment="it's # here"
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus=1g.10gb:3

#SBATCH --gres gpu:1g.10gb:2
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
