#!/bin/bash
#SBATCH --begin=2030-06-01T12:00

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
