#!/bin/bash
#SBATCH --wckey=k1
#SBATCH -o out-%4j.txt
#SBATCH -t 150
#SBATCH --reservation nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
