#!/bin/bash
#SBATCH -o out.txt # comment
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
