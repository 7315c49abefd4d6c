#!/bin/bash
#SBATCH --chdir rel
#SBATCH --exclude n[3-4]
#SBATCH --gpus-per-node=a100:1

#SBATCH -a 1,3,5
#SBATCH --open-mode append
#SBATCH --ntasks-per-node 2

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
