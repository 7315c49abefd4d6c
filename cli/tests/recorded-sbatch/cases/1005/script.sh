#!/bin/bash
#SBATCH --mem 4G
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --signal USR1@60
#SBATCH -G a100:5
#SBATCH --mem-per-cpu 1G

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
