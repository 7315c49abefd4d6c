#!/bin/bash
#SBATCH -n 3
#SBATCH -iin-%j.txt
#SBATCH --no-requeue
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
