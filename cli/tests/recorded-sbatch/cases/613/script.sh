#!/bin/bash
#SBATCH --wckey=k1
#SBATCH --partition=debug
#SBATCH --cpus-per-task=8
#SBATCH -A physics
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
#SBATCH -i in-%j.txt
#SBATCH --gpus-per-node 1g.10gb:2
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
