#!/bin/bash
#SBATCH --overcommit
#PBS -l nodes=2:ppn=2
#SBATCH --time-min=1:00:00
#SBATCH --tmp=1G
#SBATCH --error=%x.err
#SBATCH --cpus-per-task=8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
