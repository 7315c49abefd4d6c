#!/bin/bash
#SBATCH --priority=7
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
