#!/bin/bash
#SBATCH -d afterany:{P5}_1:{P5}_3
#SBATCH -t 2-0:0
#SBATCH --ntasks-per-node=4
#SBATCH --chdir=rel
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
