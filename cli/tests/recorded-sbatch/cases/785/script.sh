#!/bin/bash

#SBATCH -w n1
#SBATCH -i in-%j.txt
#SBATCH --comment="random combo"
#SBATCH --nod=2
# SBATCH --mem=1T (not a directive: space)
#PBS -l nodes=2:ppn=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
