#!/bin/bash
#SBATCH -iin-%j.txt
#SBATCH --time 30
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
