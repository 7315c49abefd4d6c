#!/bin/bash
#PBS -l nodes=1:ppn=3

#SBATCH -t 60:00
#SBATCH -N 1-1

#SBATCH --reservation=nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
