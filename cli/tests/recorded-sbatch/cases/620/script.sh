#!/bin/bash
#SBATCH -a"1,3,5"
#SBATCH --wckey=k1
#SBATCH --mincpus=8
#SBATCH --error %x.err
#SBATCH -D /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
