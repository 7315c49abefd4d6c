#!/bin/bash
#SBATCH -p batch
#PBS -q debug
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
