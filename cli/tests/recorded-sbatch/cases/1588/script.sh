#!/bin/bash
#SBATCH -i in-%j.txt
#SBATCH --signal=B:TERM
# SBATCH --mem=1T (not a directive: space)
#SBATCH --nice=-3
#SBATCH --reservation nosuchresv
#SBATCH --qos=normal
#SBATCH --gpus 1g.10gb:3
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
