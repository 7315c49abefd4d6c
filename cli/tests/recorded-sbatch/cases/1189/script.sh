#!/bin/bash
#SBATCH --mem=100m
#SBATCH --deadline=2031-01-01T00:00:00
#PBS -W depend=afterok:{P1}
#SBATCH -b 2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
