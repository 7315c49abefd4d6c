#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --tim=15
# SBATCH --mem=1T (not a directive: space)
#SBATCH -t 2-0:0
#SBATCH -o %A_%a.out
#PBS -l nodes=2:ppn=2
#SBATCH --mem-per-cpu=256
#SBATCH --time-min=1:00:00
#SBATCH -w "n3,n4"
#SBATCH -iin-%j.txt
#SBATCH --ntasks-per-node=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
