#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --kill-on-invalid-dep=yes

#PBS -l walltime=00:30:00
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH -w n1
#SBATCH --mincpus=8
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
