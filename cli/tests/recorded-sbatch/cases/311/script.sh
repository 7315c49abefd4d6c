#!/bin/bash
#SBATCH --time 2:30:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
