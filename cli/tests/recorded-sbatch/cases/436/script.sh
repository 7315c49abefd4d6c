#!/bin/bash
#SBATCH --begin=2031-01-02T03:04:05
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
