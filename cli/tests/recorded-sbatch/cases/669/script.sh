#!/bin/bash
#SBATCH --ntasks-per-node 2
#SBATCH -d afterok:{P5}_2
#SBATCH --mem-per-cpu 2048K
#SBATCH -w n3,n4

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
