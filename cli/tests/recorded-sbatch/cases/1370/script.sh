#!/bin/bash
#SBATCH --mem-per-cpu 256
#SBATCH --comment="combo, with comma"
#SBATCH --cpus-per-task 8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
