#!/bin/bash
#SBATCH --begin=2030-06-01T12:00
#SBATCH -wn1
#SBATCH -s
#SBATCH --reservation=nosuchresv

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
